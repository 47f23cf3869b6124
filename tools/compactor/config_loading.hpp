// Loading a config for a command: every error is printed on stderr, one line each.
#pragma once

#include "host/pipeline_config.hpp"

#include <optional>
#include <string_view>

namespace compactor::cli {

// The config, or nothing with `exit_code` set (2 for a bad config, 3 for a plugin failure).
std::optional<PipelineConfig> load_config_or_print_errors(const std::string& file, int& exit_code);

// A command that runs the pipeline itself (run, bench) writes a model summary inline whatever
// summarizer.mode says (only serve has a later call to put it in): said in one line on stderr
// when the config writes `mode: background` (the default is said nowhere: goldens compare stderr).
void say_summaries_inline(const PipelineConfig& config, std::string_view command);

}  // namespace compactor::cli
