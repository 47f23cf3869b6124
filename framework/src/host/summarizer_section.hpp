// `summarizer: {kind, plugin, …}`: the backend the summarizing stages are handed, with its params
// flat beside `kind`.
#pragma once

#include "host/config_context.hpp"

#include <string>

namespace compactor::detail {

// `summarizer: {kind, plugin}`: a built-in kind, one a loaded plugin registered, the file
// `plugin:` names, or compactor_summarizer_<kind>.so on the search path. Default: extractive.
void read_summarizer_section(ConfigContext& c, const YAML::Node& root);

// A model told to write at most `max_chars` chars needs room for them: at least one output token
// per 4 chars (English prose runs at about 4 chars a token; code and other scripts at fewer).
// Run once the pipeline's entries are read.
void check_summary_lengths(ConfigContext& c);

void print_summarizer_section(std::string& out, const PipelineConfig& c);

}  // namespace compactor::detail
