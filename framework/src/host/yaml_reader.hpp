// Strict reading of yaml-cpp nodes for the config loader: every accessor either returns a value
// or records one error line `file:line:col: path: expected …, got …` and returns nothing.
// YAML 1.1 surprises are refused: `yes`/`no`/`on`/`off` are not booleans, a quoted "10" is not a
// number, and a plain scalar that YAML would read as a boolean, null or number is not a string.
#pragma once

#include "compactor/param_schema.hpp"
#include "host/pipeline_config.hpp"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

namespace compactor::detail {

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  SourceLocation location(const YAML::Node& node) const;
  void error(const YAML::Node& at, const std::string& path, const std::string& what);
  void error(const SourceLocation& at, const std::string& path, const std::string& what);

  // A mapping whose keys are all in `allowed`, with no duplicates; errors otherwise. Returns
  // false when `node` is not a mapping.
  bool check_mapping(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed);
  // `key` of a mapping, or an error at the mapping when it is required and missing.
  std::optional<YAML::Node> member(const YAML::Node& map, const std::string& path, const std::string& key, bool required);

  std::optional<std::int64_t> integer(const YAML::Node& node, const std::string& path, std::int64_t min,
                                      std::int64_t max = INT64_MAX);
  std::optional<std::string> string(const YAML::Node& node, const std::string& path);
  std::optional<std::string> choice(const YAML::Node& node, const std::string& path, const std::vector<std::string>& choices);
  // A value for a stage parameter, checked against its spec.
  std::optional<ParamValue> param(const YAML::Node& node, const std::string& path, const ParamSpec& spec);

  // "nothing", "a mapping", "the quoted string \"10\"", "\"ten\""…
  static std::string describe(const YAML::Node& node);

  const std::vector<std::string>& errors() const { return errors_; }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<std::string> errors_;
};

std::string join_path(const std::string& parent, const std::string& key);

}  // namespace compactor::detail
