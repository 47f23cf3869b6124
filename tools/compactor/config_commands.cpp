// compactor validate --config F, compactor print-pipeline --config F
#include "command_line.hpp"
#include "commands.hpp"
#include "config_loading.hpp"

#include "host/exit_code.hpp"
#include "host/pipeline.hpp"
#include "host/stderr_logger.hpp"

#include <fmt/core.h>

namespace compactor::cli {

namespace {

constexpr const char* kValidateHelp = R"(usage: compactor validate --config FILE

Loads the config, loads every plugin it names, validates every stage's params against the schema
the stage declares and builds every stage, without processing anything. Prints OK and exits 0,
or prints every error (file:line:col: yaml.path: what) and exits 2 (a value a schema or a
factory refuses included; 3 when a plugin is refused or fails).
)";

constexpr const char* kPrintHelp = R"(usage: compactor print-pipeline --config FILE

Prints the normalized, resolved pipeline as YAML: every default filled in, every plugin (stage,
summarizer, checker) resolved to its file (its name and version in a comment), plugin_dirs, the
meter's file and the price table absolute. Fed back to any command it yields the same pipeline,
wherever it is saved and from any working folder, so benchmark runs can record exactly what ran.
)";

std::optional<std::string> config_arg(int argc, char** argv, const char* name, const char* help, int& exit_code) {
  const Command command{name, help};
  auto args = command.parse(argc, argv, 2, {{"config"}}, exit_code);
  if (!args) return std::nullopt;
  if (!args->positional.empty() || !args->get("config")) {
    exit_code = command.usage_error(!args->positional.empty() ? "unexpected argument " + args->positional.front()
                                                              : "--config is required");
    return std::nullopt;
  }
  return args->get("config");
}

}  // namespace

int validate_command(int argc, char** argv) {
  int exit_code = kExitOk;
  auto file = config_arg(argc, argv, "validate", kValidateHelp, exit_code);
  if (!file) return exit_code;
  auto config = load_config_or_print_errors(*file, exit_code);
  if (!config) return exit_code;
  std::size_t stages = config->pipeline.size() + config->on_prompt_too_long.size();
  ExitCode failure = kExitPluginError;
  auto pipeline = Pipeline::build(std::move(*config), &failure);
  if (!pipeline) {
    fmt::print(stderr, "{}\n", pipeline.error().message);
    return failure;
  }
  fmt::print("OK {}: {} stage(s) built\n", *file, stages);
  return kExitOk;
}

int print_pipeline_command(int argc, char** argv) {
  int exit_code = kExitOk;
  auto file = config_arg(argc, argv, "print-pipeline", kPrintHelp, exit_code);
  if (!file) return exit_code;
  auto config = load_config_or_print_errors(*file, exit_code);
  if (!config) return exit_code;
  // Said here too, as `run`, `serve` and `validate` say it: what the printed pipeline leaves out.
  for (const std::string& warning : config->warnings) make_stderr_logger("")->warn(warning);
  fmt::print("{}", print_pipeline(*config));
  return kExitOk;
}

}  // namespace compactor::cli
