// `checkers: {enabled, replace_builtins, on_violation}`: the checkers that look at every candidate
// (every built-in one and those enabled, or those alone), each a built-in checker, one a loaded
// plugin registered, or one found on the plugin search path, with its params.
#pragma once

#include "host/config_context.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor::detail {

class CheckersSection {
 public:
  // The section as written (its entries are resolved once plugin_dirs is read).
  void read(ConfigContext& c, const YAML::Node& root);
  // Each entry resolved and its params validated; then the list that runs.
  void resolve(ConfigContext& c);

 private:
  void read_entry(ConfigContext& c, const YAML::Node& node, const std::string& path);
  void settle(ConfigContext& c);

  // Each entry as read, and its nodes (for located errors).
  struct Nodes {
    YAML::Node entry;
    std::optional<YAML::Node> plugin, params;
  };
  std::optional<YAML::Node> enabled_;
  SourceLocation at_;
  std::vector<CheckerEntryConfig> entries_;
  std::vector<Nodes> nodes_;
};

void print_checkers_section(std::string& out, const PipelineConfig& c);

}  // namespace compactor::detail
