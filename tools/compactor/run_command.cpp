// compactor run --config F --input F [--output F] [--report F] [--request TEXT] [--reason prompt_too_long] [--model NAME]
#include "command_line.hpp"
#include "commands.hpp"
#include "config_loading.hpp"

#include "store/store.hpp"
#include "host/atomic_file.hpp"
#include "host/child_run.hpp"
#include "model/conversation_reader.hpp"
#include "host/exit_code.hpp"
#include "host/pipeline.hpp"
#include "host/stderr_logger.hpp"
#include "model/conversation_host.hpp"

#include <fmt/core.h>

#include <chrono>
#include <filesystem>

namespace compactor::cli {

namespace {

constexpr const char* kHelp = R"(usage: compactor run --config FILE --input FILE [--output FILE] [--report FILE]
                     [--request TEXT] [--reason prompt_too_long] [--model NAME]

Runs the config's pipeline on the conversation (messages array, request body or JSONL; "-" is
stdin) and prints a summary. Each stage runs when its `when` holds; every enabled checker looks at
its candidate, which is committed, or rejected with the conversation left as it was.

options:
  --output FILE    write the resulting conversation ("-": stdout), atomically, on exit 0 and 1
  --report FILE    write the JSON run report ("-": stdout), atomically
  --request TEXT   the active request, kept verbatim (default: found in the conversation)
  --reason prompt_too_long
                   run the config's on_prompt_too_long pipeline instead (after the API refused)
  --model NAME     the model the conversation is for: the window of `budget: {window: auto}` and
                   the meter of `meter: {kind: auto}` (default: the request body's "model", else
                   the price table's default model, which the summary then names)
@INPUT_FORMAT@
                   how to read the input (default auto: detected from its bytes and name); an
                   API's request body (or messages or items array) is written back in its own
                   form, with every field it carried; a log is imported first:
@INPUT_FORMS@

A run knows no previous call, so it takes the prompt cache as cold: the cost gate (a config with
`prices:` and a budget in tokens) weighs the compaction and reports its figures, and commits it.

exit codes: 0 within budget, or the cost gate declined; 1 still over budget, or a stage's candidate was rejected (the last
committed conversation is written; a decline is not an error); 2 bad input or config (nothing
written); 3 plugin failure or internal error (nothing written).
)";

int read_run_and_write(Pipeline& pipeline, const ParsedArgs& args, const std::string& input_path,
                            const std::optional<std::string>& output, const std::optional<std::string>& report_path,
                       ChildProgress& progress);

}  // namespace

int run_command(int argc, char** argv) {
  const Command command{"run", with_input_forms(kHelp)};
  int exit_code = kExitOk;
  auto args = command.parse(
      argc, argv, 2, {{"config"}, {"input"}, {"output"}, {"report"}, {"request"}, {"reason"}, {"input-format"}, {"model"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  if (!args->positional.empty()) error = "unexpected argument " + args->positional.front();
  else if (!args->get("config")) error = "--config is required";
  else if (!args->get("input")) error = "--input is required";
  else if (args->get("reason") && *args->get("reason") != "prompt_too_long")
    error = "--reason takes only prompt_too_long, got \"" + *args->get("reason") + "\"";
  else if (auto bad = wire::input_format_error(args->get("input-format"))) error = *bad;
  if (!error.empty()) return command.usage_error(error);
  std::string input_path = *args->get("input");
  std::optional<std::string> output = args->get("output"), report_path = args->get("report");
  std::vector<NamedPath> outputs;
  if (output) outputs.push_back({"--output", *output});
  if (report_path) outputs.push_back({"--report", *report_path});
  if (auto conflict = overwrite_conflict({{"the input", input_path}, {"the config", *args->get("config")}}, outputs)) {
    fmt::print(stderr, "compactor run: {}\n", *conflict);
    return kExitBadInput;
  }

  auto config = load_config_or_print_errors(*args->get("config"), exit_code);
  if (!config) return exit_code;
  say_summaries_inline(*config, "run");
  ExitCode failure = kExitPluginError;
  auto pipeline = Pipeline::build(std::move(*config), &failure);
  if (!pipeline) {
    fmt::print(stderr, "{}\n", pipeline.error().message);
    return failure;
  }
  // The pipeline runs in a child process: a plugin that crashes, hangs past
  // limits.stage_timeout_ms or ends the process is reported (exit 3) and nothing is written.
  // The child reads the input too: this process never holds it, so the fork copies none of it
  // and the run's largest process holds it once.
  const std::string archive_dir = pipeline->config().archive_dir;
  const auto stage_timeout = std::chrono::milliseconds(pipeline->config().stage_timeout_ms);
  auto outcome = run_in_child(
      [&](ChildProgress& progress) { return read_run_and_write(*pipeline, *args, input_path, output, report_path, progress); },
      stage_timeout, archive_dir);
  if (outcome.failed) fmt::print(stderr, "compactor run: {}\n", outcome.error);
  return outcome.exit_code;
}

namespace {

int read_run_and_write(Pipeline& pipeline, const ParsedArgs& args, const std::string& input_path,
                            const std::optional<std::string>& output, const std::optional<std::string>& report_path,
                       ChildProgress& progress) {
  auto doc = read_input(input_path, args.get("input-format"));
  if (!doc) {
    fmt::print(stderr, "{}\n", doc.error().message);
    return kExitBadInput;
  }
  const std::vector<CheckerPtr> rules = doc->format->rules();
  const Conversation& input = doc->request->conversation();
  RunOptions options;
  options.on_stage_start = [&](const std::string& stage, const std::string& plugin) { progress.stage_started(stage, plugin); };
  options.on_stage_end = [&] { progress.stage_finished(); };
  options.prompt_too_long = args.has("reason");
  options.request = args.get("request");
  options.input_name = input_path == "-" ? "<stdin>" : input_path;
  options.rules = &rules;
  // A config whose store is Redis archives there (connected here, in the child), so that its
  // receipts restore from any machine with the same config.
  std::unique_ptr<store::Store> store;
  if (pipeline.config().store.kind == StoreConfig::Kind::redis) {
    store = store::open_store(pipeline.config().store, pipeline.config().archive_dir, "");
    options.open_archive = [&store](FileSystem& fs) { return store->open_run(fs); };
  }
  const auto& body = ConversationHost::layout(input.frame()).buffer;
  options.model = args.get("model").value_or(body != nullptr ? doc->format->model_named_in(*body) : std::string());
  options.openai = doc->format->openai_tokenizer();
  if (body != nullptr) options.native_context = doc->format->native_context(*body);
  auto log = make_stderr_logger("");
  RunReport report = pipeline.run(input, options, *log);

  if (report.status == RunStatus::bad_input) {
    std::string_view rest = report.error;
    while (!rest.empty()) {
      std::size_t nl = rest.find('\n');
      fmt::print(stderr, "{}: {}\n", options.input_name, rest.substr(0, nl));
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
    return kExitBadInput;
  }
  if (report.status == RunStatus::failed) fmt::print(stderr, "{}\n", report.error);
  // Every violation, one line each (the summary shows a rejected stage's first only).
  for (const auto& s : report.stages)
    for (const auto& v : s.violation_lines()) fmt::print(stderr, "{}: {}\n", options.input_name, v);
  // Both files are written before either replaces its target: a report that cannot be written
  // leaves the old output in place, as exit 3 promises.
  // The output is written from its pieces (what Conversation::serialize would join), so there is
  // no second copy of the whole conversation in memory.
  std::string report_bytes = report.to_json();
  std::vector<FileWrite> files;
  std::string written_back;  // another API's request, written back in its form
  if (output && report.output && report.exit_code() != kExitBadInput && report.exit_code() != kExitPluginError) {
    FileWrite file{*output, {}};
    if (doc->request->writes_model_form()) {
      file.parts = ConversationHost::pieces(*report.output);
    } else {
      auto back = doc->request->write(*report.output);
      if (!back) {
        fmt::print(stderr, "compactor run: {}: {}\n", options.input_name, back.error().message);
        return kExitPluginError;
      }
      written_back = std::move(*back);
      file.bytes = written_back;
    }
    files.push_back(std::move(file));
  }
  if (report_path) files.push_back({*report_path, report_bytes});
  if (auto written = write_files_atomically(files); !written) {
    fmt::print(stderr, "compactor run: {}\n", written.error().message);
    return kExitPluginError;
  }
  bool stdout_taken = output == std::optional<std::string>("-") || report_path == std::optional<std::string>("-");
  fmt::print(stdout_taken ? stderr : stdout, "{}", report.summary());
  return report.exit_code();
}

}  // namespace

}  // namespace compactor::cli
