// `pipeline:` and `on_prompt_too_long:`: the stages in order, each resolved to a plugin (the file
// `plugin:` names, one on the plugin search path, or one registered in process), its `when` and
// its params validated against the schema the stage declared.
#pragma once

#include "host/config_context.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor::detail {

class StageEntries {
 public:
  // The list under `key`; each entry's params node, for read_stage_params once every list is read.
  void read(ConfigContext& c, const YAML::Node& root, const std::string& key, bool required, std::vector<PipelineEntryConfig>& out,
            std::vector<YAML::Node>& params_nodes);

 private:
  // The stages the search path and the registry know, for an unknown stage's error.
  const std::string& known_stages(const ConfigContext& c);
  std::optional<std::string> known_stages_;  // computed at the first unknown stage
};

// An entry's params, validated against its stage's schema, defaults filled in.
void read_stage_params(ConfigContext& c, PipelineEntryConfig& entry, const YAML::Node* params);

void print_stage_entries(std::string& out, const std::string& key, const std::vector<PipelineEntryConfig>& entries);

}  // namespace compactor::detail
