// `archive: {dir, restore_via}`: where removals are archived, and how the model is told to get
// them back.
#pragma once

#include "host/config_context.hpp"

#include <string>

namespace compactor::detail {

// Where archive.dir is written (an empty location when it is not).
SourceLocation read_archive_section(ConfigContext& c, const YAML::Node& root);

void print_archive_section(std::string& out, const PipelineConfig& c);

}  // namespace compactor::detail
