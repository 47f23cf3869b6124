#include "config_loading.hpp"

#include "host/exit_code.hpp"

#include <fmt/core.h>

namespace compactor::cli {

std::optional<PipelineConfig> load_config_or_print_errors(const std::string& file, int& exit_code) {
  ConfigLoadResult loaded = load_pipeline_config(file);
  if (loaded.config) return std::move(loaded.config);
  for (const auto& e : loaded.errors) fmt::print(stderr, "{}\n", e);
  exit_code = loaded.plugin_failure ? kExitPluginError : kExitBadInput;
  return std::nullopt;
}

void say_summaries_inline(const PipelineConfig& config, std::string_view command) {
  if (!config.background_summaries() || !config.summarizer_mode_written) return;
  fmt::print(stderr,
             "compactor {}: {}: summarizer.mode background is serve's; here the {} summarizer writes each summary inline, "
             "as the call needs it\n",
             command, config.file, config.summarizer_kind);
}

}  // namespace compactor::cli
