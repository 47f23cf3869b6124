// The test kit runs a stage through the host's own Pipeline (one entry, `when: always`), so what
// a test sees is what `compactor run` would do: same checkers, archive and commit rules.
#include "compactor/testkit.hpp"

#include "archive/archive_store.hpp"
#include "checkers/builtin_checkers.hpp"
#include "host/pipeline.hpp"
#include "loader/plugin_loader.hpp"
#include "model/conversation_reader.hpp"

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

ConversationBuilder& ConversationBuilder::user(std::string text) { return message(text_message("user", std::move(text))); }
ConversationBuilder& ConversationBuilder::assistant(std::string text) {
  return message(text_message("assistant", std::move(text)));
}

ConversationBuilder& ConversationBuilder::tool_call(std::string id, std::string name, boost::json::object input,
                                                    std::string result, bool is_error) {
  message({{"role", "assistant"},
           {"content", boost::json::array{boost::json::object{
                           {"type", "tool_use"}, {"id", id}, {"name", std::move(name)}, {"input", std::move(input)}}}}});
  boost::json::object r{{"type", "tool_result"}, {"tool_use_id", std::move(id)}, {"content", std::move(result)}};
  if (is_error) r["is_error"] = true;
  return message({{"role", "user"}, {"content", boost::json::array{std::move(r)}}});
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

StageRun run_stage_checked(const StageInfo& stage, const Conversation& input, const StageRunOptions& options) {
  PluginRegistry& registry = PluginRegistry::instance();
  const RegisteredStage* registered = registry.find_stage(stage.name);
  if (registered == nullptr || registered->info != &stage) {  // not the very one a plugin registered
    auto added = registry.add_builtin(stage);
    if (!added) throw std::runtime_error(added.error().message);
    registered = *added;
  }
  PipelineConfig config;
  config.file = "<testkit>";
  config.budget = options.budget;
  config.recent_exchanges = options.recent_exchanges;
  config.archive_dir = options.archive_dir.empty() ? fresh_archive_dir() : options.archive_dir;
  for (auto name : builtin_checker_names()) config.checkers.push_back(CheckerEntryConfig{std::string(name), "", {}, nullptr, {}, ""});
  if (!options.checkers.empty()) {
    config.checkers.clear();
    for (const std::string& name : options.checkers) config.checkers.push_back(CheckerEntryConfig{name, "", {}, nullptr, {}, ""});
  }
  for (const CheckerInfo* c : options.extra_checkers) {
    const RegisteredChecker* known = registry.find_checker(c->name);
    if (known == nullptr || known->info != c) {
      auto added = registry.add_builtin_checker(*c);
      if (!added) throw std::runtime_error(added.error().message);
      known = *added;
    }
    ParamValues params;
    for (const ParamSpec& p : c->params)
      if (p.default_value) params.set(p.name, *p.default_value);
    config.checkers.push_back(CheckerEntryConfig{c->name, "", params, known, {}, ""});
  }
  PipelineEntryConfig entry;
  entry.stage = stage.name;
  entry.registered = registered;
  entry.yaml_path = "pipeline[0]";
  entry.location = SourceLocation{"<testkit>", 1, 1};
  // The stage's params, validated and filled as the config loader does.
  for (const auto& [name, value] : options.params.all()) {
    bool known = false;
    for (const ParamSpec& p : stage.params) known = known || p.name == name;
    if (!known) throw std::runtime_error("stage " + stage.name + " has no param \"" + name + "\"");
  }
  for (const ParamSpec& p : stage.params) {
    if (auto given = options.params.all().find(p.name); given != options.params.all().end()) entry.params.set(p.name, given->second);
    else if (p.default_value) entry.params.set(p.name, *p.default_value);
    else throw std::runtime_error("stage " + stage.name + ": param \"" + p.name + "\" is required");
  }
  config.pipeline.push_back(std::move(entry));

  auto pipeline = Pipeline::build(std::move(config));
  if (!pipeline) throw std::runtime_error(pipeline.error().message);
  SilentLogger log;
  RunOptions run_options;
  run_options.input_name = "<testkit>";
  RunReport report = pipeline->run(input, run_options, log);
  StageRun out{"failed", report.error, {}, report.output ? *report.output : input, pipeline->config().archive_dir};
  if (!report.stages.empty()) {
    const StageRunReport& s = report.stages.front();
    out.status = std::string(to_string(s.status));
    out.reason = s.reason;
    out.violations = s.violation_lines();
  }
  return out;
}

const StageInfo& load_stage(const std::string& file, const std::string& name) {
  auto loaded = PluginRegistry::instance().load(file);
  if (!loaded) throw std::runtime_error(loaded.error().message);
  const RegisteredStage* s = PluginRegistry::instance().find_stage(name);
  if (s == nullptr || s->plugin != *loaded) throw std::runtime_error(file + " does not provide stage \"" + name + "\"");
  return *s->info;
}

const CheckerInfo& load_checker(const std::string& file, const std::string& name) {
  auto loaded = PluginRegistry::instance().load(file);
  if (!loaded) throw std::runtime_error(loaded.error().message);
  const RegisteredChecker* c = PluginRegistry::instance().find_checker(name);
  if (c == nullptr || c->plugin != *loaded) throw std::runtime_error(file + " does not provide checker \"" + name + "\"");
  return *c->info;
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
