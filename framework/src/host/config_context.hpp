// What the readers of a config's sections share while one file is read: where the located errors
// go, the config's folder, the config they fill in, and the plugin search path. The loader
// (pipeline_config.cpp) reads the file and hands each section to the reader its part owns, as
// serve_config.cpp reads `serve:`.
#pragma once

#include "host/pipeline_config.hpp"
#include "host/yaml_reader.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace compactor::detail {

struct ConfigContext {
  YamlReader& r;
  std::filesystem::path base;   // the config's folder
  PipelineConfig& config;       // what the sections fill in
  bool plugin_failure = false;  // a plugin was refused or failed: exit 3, not 2

  // A path the config gives, against its folder.
  std::string resolve(const std::string& path) const;
  // Where plugins are searched: plugin_dirs, plugins/ beside the config, each folder of
  // COMPACTOR_PLUGIN_PATH, then the host's own plugin folder.
  std::vector<std::string> search_dirs() const;
  // What loads but is probably not meant, one located line: said when a pipeline is built from it.
  void warning(const SourceLocation& at, const std::string& path, const std::string& what);
  // The keys of `map` (except the host's own `host_keys`) validated against `schema`, defaults
  // filled in; a missing required one is reported at `missing_at`.
  void read_param_map(const ParamSchema& schema, const std::string& owner, const YAML::Node* map, const std::string& path,
                      const std::set<std::string>& host_keys, const SourceLocation& missing_at, const std::string& missing_path,
                      ParamValues& out);
};

// "a, b, c".
std::string list(const std::vector<std::string>& items);

// `path` against the folder `base`, normalized.
std::string resolve_path(const std::filesystem::path& base, const std::string& path);

}  // namespace compactor::detail
