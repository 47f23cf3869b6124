// Loading a config for a command: every error is printed on stderr, one line each.
#pragma once

#include "host/pipeline_config.hpp"

#include <optional>

namespace compactor::cli {

// The config, or nothing with `exit_code` set (2 for a bad config, 3 for a plugin failure).
std::optional<PipelineConfig> load_config_or_print_errors(const std::string& file, int& exit_code);

}  // namespace compactor::cli
