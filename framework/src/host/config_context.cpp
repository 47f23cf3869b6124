#include "host/config_context.hpp"

#include "loader/plugin_discovery.hpp"

namespace compactor::detail {

namespace fs = std::filesystem;

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string resolve_path(const fs::path& base, const std::string& path) {
  fs::path p(path);
  return (p.is_absolute() ? p : base / p).lexically_normal().string();
}

std::string ConfigContext::resolve(const std::string& path) const { return resolve_path(base, path); }

std::vector<std::string> ConfigContext::search_dirs() const {
  std::vector<std::string> dirs = config.plugin_dirs;
  dirs.push_back((base / "plugins").lexically_normal().string());
  for (const auto& d : env_plugin_dirs()) dirs.push_back(d);
  for (const auto& d : default_plugin_dirs()) dirs.push_back(d);
  return dirs;
}

void ConfigContext::warning(const SourceLocation& at, const std::string& path, const std::string& what) {
  config.warnings.push_back(at.to_string() + ": " + path + ": " + what);
}

void ConfigContext::read_param_map(const ParamSchema& schema, const std::string& owner, const YAML::Node* map, const std::string& path,
                                   const std::set<std::string>& host_keys, const SourceLocation& missing_at,
                                   const std::string& missing_path, ParamValues& out) {
  std::vector<std::string> names(host_keys.begin(), host_keys.end());
  for (const auto& p : schema) names.push_back(p.name);
  std::set<std::string> seen;  // given, valid or not: an invalid value is not also "missing"
  if (map != nullptr) {
    for (auto it = map->begin(); it != map->end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      std::string key_path = join_path(path, key);
      if (!seen.insert(key).second) {
        r.error(it->first, key_path, "duplicate key");
        continue;
      }
      if (host_keys.count(key)) continue;
      const ParamSpec* spec = nullptr;
      for (const auto& p : schema)
        if (p.name == key) spec = &p;
      if (spec == nullptr) {
        r.error(it->first, key_path,
                host_keys.empty() ? "unknown parameter; " + owner + " takes: " + (names.empty() ? "none" : list(names))
                                   : "unknown key; expected one of: " + list(names));
        continue;
      }
      if (auto v = r.param(it->second, key_path, *spec)) out.set(key, *v);
    }
  }
  for (const auto& spec : schema) {
    if (out.has(spec.name) || seen.count(spec.name)) continue;
    if (spec.default_value) {
      out.set(spec.name, *spec.default_value);
    } else if (spec.is_required()) {
      r.error(missing_at, missing_path, "missing required parameter \"" + spec.name + "\" (" + spec.expectation() + ")");
    }
  }
}

}  // namespace compactor::detail
