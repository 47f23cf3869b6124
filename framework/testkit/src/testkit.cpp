// The test kit runs a stage (one entry, `when: always`) or a config's whole pipeline through the
// host's own Pipeline, and a summarizer through the host's guard, so what a test sees is what
// `compactor run` would do: the same param validation, checkers, archive and commit rules.
#include "compactor/testkit.hpp"

#include "archive/archive_store.hpp"
#include "loader/builtin_checkers.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/run_report.hpp"
#include "loader/plugin_loader.hpp"
#include "meter/meter_kinds.hpp"
#include "model/conversation_host.hpp"
#include "model/conversation_reader.hpp"
#include "wire/wire_format.hpp"

#include <boost/json/serialize.hpp>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace compactor::testkit {
namespace {

namespace fs = std::filesystem;

class SilentLogger final : public StageLogger {
 public:
  void log(LogLevel, std::string_view) override {}
};

boost::json::object text_message(std::string_view role, std::string text) {
  return {{"role", role}, {"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

// A fresh archive folder for one run, removed when the test program exits normally (a StageRun
// names it, so a test can restore from it until then).
std::string fresh_archive_dir() {
  struct Made {
    std::mutex mutex;
    std::vector<fs::path> folders;
    pid_t owner = ::getpid();  // a forked child that calls exit() must not remove them
    ~Made() {
      if (::getpid() != owner) return;
      std::error_code ignored;
      for (const auto& f : folders) fs::remove_all(f, ignored);
    }
  };
  static Made made;
  std::lock_guard lock(made.mutex);
  fs::path dir = fs::temp_directory_path() /
                 ("compactor-testkit-" + std::to_string(::getpid()) + "-" + std::to_string(made.folders.size()));
  fs::remove_all(dir);
  made.folders.push_back(dir);
  return dir.string();
}

Conversation parse_or_throw(Expected<Conversation> c) {
  if (!c) throw std::runtime_error(c.error().message);
  return std::move(c).value();
}

}  // namespace

boost::json::object text(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }
boost::json::object thinking(std::string thinking, std::string signature) {
  return {{"type", "thinking"}, {"thinking", std::move(thinking)}, {"signature", std::move(signature)}};
}
boost::json::object redacted_thinking(std::string data) { return {{"type", "redacted_thinking"}, {"data", std::move(data)}}; }
boost::json::object tool_use(std::string id, std::string name, boost::json::object input) {
  return {{"type", "tool_use"}, {"id", std::move(id)}, {"name", std::move(name)}, {"input", std::move(input)}};
}
boost::json::object tool_result(std::string tool_use_id, boost::json::value content, bool is_error) {
  boost::json::object r{{"type", "tool_result"}, {"tool_use_id", std::move(tool_use_id)}, {"content", std::move(content)}};
  if (is_error) r["is_error"] = true;
  return r;
}
boost::json::object image(std::string media_type, std::string base64_data) {
  return {{"type", "image"},
          {"source", boost::json::object{{"type", "base64"}, {"media_type", std::move(media_type)}, {"data", std::move(base64_data)}}}};
}

ConversationBuilder& ConversationBuilder::user_turn(std::vector<boost::json::object> blocks) {
  return message({{"role", "user"}, {"content", boost::json::array(blocks.begin(), blocks.end())}});
}
ConversationBuilder& ConversationBuilder::assistant_turn(std::vector<boost::json::object> blocks) {
  return message({{"role", "assistant"}, {"content", boost::json::array(blocks.begin(), blocks.end())}});
}

ConversationBuilder& ConversationBuilder::user(std::string text) { return message(text_message("user", std::move(text))); }
ConversationBuilder& ConversationBuilder::assistant(std::string text) {
  return message(text_message("assistant", std::move(text)));
}

ConversationBuilder& ConversationBuilder::tool_call(std::string id, std::string name, boost::json::object input,
                                                    std::string result, bool is_error) {
  assistant_turn({tool_use(id, std::move(name), std::move(input))});
  return user_turn({tool_result(std::move(id), boost::json::string(std::move(result)), is_error)});
}

ConversationBuilder& ConversationBuilder::message(boost::json::object json) {
  if (auto m = Message::from_json(json); !m)
    throw std::invalid_argument("message " + std::to_string(messages_.size()) + ": " + m.error().message);
  messages_.push_back(std::move(json));
  return *this;
}

ConversationBuilder& ConversationBuilder::system(std::string text) {
  system_ = std::move(text);
  return *this;
}

ConversationBuilder& ConversationBuilder::tool(std::string name, std::string description) {
  tools_.push_back({{"name", std::move(name)},
                    {"description", std::move(description)},
                    {"input_schema", boost::json::object{{"type", "object"}}}});
  return *this;
}

Conversation ConversationBuilder::build() const {
  boost::json::array messages(messages_.begin(), messages_.end());
  // Through the reader, so the messages carry input spans and the frame is what the host makes.
  if (system_.empty() && tools_.empty()) return read_conversation(boost::json::serialize(messages));
  boost::json::object body{{"model", "claude-sonnet-4-5"}, {"max_tokens", 1024}};
  if (!system_.empty()) body["system"] = system_;
  if (!tools_.empty()) body["tools"] = boost::json::array(tools_.begin(), tools_.end());
  body["messages"] = std::move(messages);
  return read_conversation(boost::json::serialize(body));
}

Conversation read_conversation_file(const std::string& path) { return parse_or_throw(compactor::read_conversation_file(path)); }

Conversation read_conversation(const std::string& text) {
  return parse_or_throw(compactor::read_conversation(text, ReadOptions{"<testkit>", 256, std::nullopt}));
}

std::shared_ptr<const Meter> meter(const std::string& kind, const std::string& fit_file, const std::string& family) {
  auto made = make_meter(MeterSpec{kind, fit_file, family});
  if (!made) throw std::runtime_error("meter " + kind + ": " + made.error().message);
  return std::move(made).value();
}

Conversation metered(const Conversation& conversation, std::shared_ptr<const Meter> meter) {
  return ConversationHost::with_meter(conversation, std::move(meter));
}

std::string_view to_string(Status status) {
  switch (status) {
    case Status::committed: return "committed";
    case Status::unchanged: return "unchanged";
    case Status::skipped: return "skipped";
    case Status::declined: return "declined";
    case Status::rejected: return "rejected";
    case Status::failed: return "failed";
  }
  return "?";
}

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::ok: return "ok";
    case RunStatus::over_budget: return "over_budget";
    case RunStatus::rejected: return "rejected";
    case RunStatus::aborted: return "aborted";
    case RunStatus::not_compacted: return "not_compacted";
    case RunStatus::bad_input: return "bad_input";
    case RunStatus::failed: return "failed";
    case RunStatus::declined: return "declined";
    case RunStatus::deferred: return "deferred";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& out, Status status) { return out << to_string(status); }
std::ostream& operator<<(std::ostream& out, RunStatus status) { return out << to_string(status); }

namespace {

Status status_of(StageStatus s) {
  switch (s) {
    case StageStatus::committed: return Status::committed;
    case StageStatus::unchanged: return Status::unchanged;
    case StageStatus::skipped: return Status::skipped;
    case StageStatus::declined: return Status::declined;
    case StageStatus::rejected: return Status::rejected;
    case StageStatus::failed: return Status::failed;
  }
  return Status::failed;
}

RunStatus run_status_of(compactor::RunStatus s) {
  switch (s) {
    case compactor::RunStatus::ok: return RunStatus::ok;
    case compactor::RunStatus::over_budget: return RunStatus::over_budget;
    case compactor::RunStatus::rejected: return RunStatus::rejected;
    case compactor::RunStatus::not_compacted: return RunStatus::not_compacted;
    case compactor::RunStatus::aborted: return RunStatus::aborted;
    case compactor::RunStatus::bad_input: return RunStatus::bad_input;
    case compactor::RunStatus::failed: return RunStatus::failed;
    case compactor::RunStatus::declined: return RunStatus::declined;
    case compactor::RunStatus::deferred: return RunStatus::deferred;
  }
  throw std::logic_error("the host reported a run status the test kit does not know");
}

StageOutcome outcome_of(const StageRunReport& s) { return StageOutcome{s.stage, status_of(s.status), s.reason, s.violations}; }

ParamValues validated_or_throw(const ParamSchema& schema, const ParamValues& given, const std::string& owner) {
  auto params = validated_params(schema, given, owner);
  if (!params) throw std::runtime_error(params.error().message);
  return std::move(params).value();
}

// The very info `info` points to, registered in process unless a plugin registered it.
template <class Info>
const Registered<Info>& registered(const Info& info) {
  PluginRegistry& registry = PluginRegistry::instance();
  const Registered<Info>* known = registry.find<Info>(info.name);
  if (known != nullptr && known->info == &info) return *known;
  auto added = registry.add_builtin(info);
  if (!added) throw std::runtime_error(added.error().message);
  return **added;
}

}  // namespace

StageRun run_stage_checked(const StageInfo& stage, const Conversation& input, const StageRunOptions& options) {
  PluginRegistry& registry = PluginRegistry::instance();
  PipelineConfig config;
  config.file = "<testkit>";
  config.budget = options.budget;
  config.recent_exchanges = options.recent_exchanges;
  // A folder of the test's own, named as a deployment names it; else the default folder's name (so
  // the restore instruction reads as it does by default) over a fresh temporary one.
  const std::string archive_dir = options.archive_dir.empty() ? fresh_archive_dir() : options.archive_dir;
  if (!options.archive_dir.empty()) config.archive_dir = options.archive_dir;
  if (auto problem = restore_via_problem(options.restore_via)) throw std::runtime_error("restore_via: " + *problem);
  config.restore_via = options.restore_via;
  auto builtin = [](const std::string& name) { return CheckerEntryConfig{name, "", {}, nullptr, {}, ""}; };
  for (auto name : builtin_checker_names()) config.checkers.push_back(builtin(std::string(name)));
  if (!options.checkers.empty()) {
    config.checkers.clear();
    config.replace_builtin_checkers = true;
    for (const std::string& name : options.checkers) {
      if (make_builtin_checker(name) == nullptr) throw std::runtime_error("no built-in checker \"" + name + "\" (give yours in extra_checkers)");
      config.checkers.push_back(builtin(name));
    }
  }
  for (const ExtraChecker& c : options.extra_checkers) {
    if (c.checker == nullptr) throw std::runtime_error("extra_checkers: a checker is null");
    config.checkers.push_back(CheckerEntryConfig{c.checker->name, "", validated_or_throw(c.checker->params, c.params, "checker " + c.checker->name),
                                                 &registered(*c.checker), {}, ""});
  }
  config.meter = options.meter;
  config.summarizer = options.summarizer != nullptr ? &registered(*options.summarizer) : registry.find_summarizer("extractive");
  config.summarizer_kind = config.summarizer->info->name;
  config.summarizer_params = validated_or_throw(config.summarizer->info->params, options.summarizer_params, "summarizer " + config.summarizer_kind);

  PipelineEntryConfig entry;
  entry.stage = stage.name;
  entry.registered = &registered(stage);
  entry.yaml_path = "pipeline[0]";
  entry.location = SourceLocation{"<testkit>", 1, 1};
  entry.params = validated_or_throw(stage.params, options.params, "stage " + stage.name);
  config.pipeline.push_back(std::move(entry));

  auto pipeline = Pipeline::build(std::move(config));
  if (!pipeline) throw std::runtime_error(pipeline.error().message);
  SilentLogger log;
  RunOptions run_options;
  run_options.input_name = "<testkit>";
  run_options.archive_dir = archive_dir;
  RunReport report = pipeline->run(input, run_options, log);
  StageRun out{{stage.name, Status::failed, report.error, {}}, report.output ? *report.output : input, archive_dir};
  if (!report.stages.empty()) static_cast<StageOutcome&>(out) = outcome_of(report.stages.front());
  return out;
}

const StageOutcome& PipelineRun::stage(std::string_view name) const {
  for (const StageOutcome& s : stages)
    if (s.stage == name) return s;
  throw std::out_of_range("the run has no stage \"" + std::string(name) + "\"");
}

PipelineRun run_pipeline(const std::string& config_file, const Conversation& input, const PipelineRunOptions& options) {
  for (const StageInfo* s : options.stages) registered(*s);
  for (const CheckerInfo* c : options.checkers) registered(*c);
  for (const SummarizerInfo* s : options.summarizers) registered(*s);
  ConfigLoadResult loaded = load_pipeline_config(config_file);
  if (!loaded.config) {
    std::string lines;
    for (const std::string& e : loaded.errors) lines += (lines.empty() ? "" : "\n") + e;
    throw std::runtime_error(lines);
  }
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  if (!pipeline) throw std::runtime_error(pipeline.error().message);
  SilentLogger log;
  RunOptions run_options;
  run_options.input_name = "<testkit>";
  run_options.prompt_too_long = options.prompt_too_long;
  run_options.archive_dir = options.archive_dir.empty() ? fresh_archive_dir() : options.archive_dir;
  // What `compactor run` asks of the body of a request in the model's form (the Messages API's).
  if (const auto& body = ConversationHost::layout(input.frame()).buffer; body != nullptr) {
    const wire::WireFormat& api = *wire::wire_formats().front();
    run_options.model = api.model_named_in(*body);
    run_options.native_context = api.native_context(*body);
    run_options.openai = api.openai_tokenizer();
  }
  RunReport report = pipeline->run(input, run_options, log);
  PipelineRun out{run_status_of(report.status), static_cast<int>(report.exit_code()), report.error, {}, report.output ? *report.output : input,
                  *run_options.archive_dir};
  for (const StageRunReport& s : report.stages) out.stages.push_back(outcome_of(s));
  return out;
}

Expected<Summary> summarize(const SummarizerInfo& summarizer, const Conversation& conversation, const SummarizeOptions& options) {
  const RegisteredSummarizer& backend = registered(summarizer);
  auto made = create_guarded_summarizer(backend, validated_or_throw(summarizer.params, options.params, "summarizer " + summarizer.name));
  if (!made) return made.error();
  std::size_t end = options.end != 0 ? options.end : conversation.size() - std::min<std::size_t>(conversation.size(), 1);
  return (*made)->summarize(SummaryRequest{conversation, end, options.requests, options.max_chars});
}

const StageInfo& load_stage(const std::string& file, const std::string& name) {
  auto loaded = PluginRegistry::instance().load_for(file, "stage", name);
  if (!loaded) throw std::runtime_error(loaded.error().message);
  const RegisteredStage* s = PluginRegistry::instance().find_stage(name);
  if (s == nullptr || s->plugin != *loaded) throw std::runtime_error(file + " does not provide stage \"" + name + "\"");
  return *s->info;
}

const CheckerInfo& load_checker(const std::string& file, const std::string& name) {
  auto loaded = PluginRegistry::instance().load_for(file, "checker", name);
  if (!loaded) throw std::runtime_error(loaded.error().message);
  const RegisteredChecker* c = PluginRegistry::instance().find_checker(name);
  if (c == nullptr || c->plugin != *loaded) throw std::runtime_error(file + " does not provide checker \"" + name + "\"");
  return *c->info;
}

const SummarizerInfo& load_summarizer(const std::string& file, const std::string& kind) {
  auto loaded = PluginRegistry::instance().load_for(file, "summarizer", kind);
  if (!loaded) throw std::runtime_error(loaded.error().message);
  const RegisteredSummarizer* s = PluginRegistry::instance().find_summarizer(kind);
  if (s == nullptr || s->plugin != *loaded) throw std::runtime_error(file + " does not provide summarizer \"" + kind + "\"");
  return *s->info;
}

::testing::AssertionResult matches_golden(const std::string& actual, const std::string& golden_file) {
  if (const char* update = std::getenv("COMPACTOR_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(golden_file, std::ios::binary) << actual;
    return ::testing::AssertionSuccess() << "wrote " << golden_file;
  }
  std::ifstream in(golden_file, std::ios::binary);
  if (!in) return ::testing::AssertionFailure() << golden_file << ": cannot read the golden file (COMPACTOR_UPDATE_GOLDEN=1 writes it)";
  std::stringstream expected;
  expected << in.rdbuf();
  if (expected.str() == actual) return ::testing::AssertionSuccess();
  std::size_t at = 0;
  while (at < actual.size() && at < expected.str().size() && actual[at] == expected.str()[at]) ++at;
  return ::testing::AssertionFailure() << golden_file << ": differs at byte " << at << " (expected "
                                       << expected.str().size() << " bytes, got " << actual.size() << ")";
}

std::string restore(const std::string& archive_dir, const std::string& receipt) {
  auto bytes = restore_blob(archive_dir, receipt);
  if (!bytes) throw std::runtime_error(bytes.error().message);
  return std::move(bytes).value();
}

}  // namespace compactor::testkit
