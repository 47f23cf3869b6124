#include "host/pipeline_section.hpp"

#include "host/yaml_writer.hpp"
#include "loader/plugin_discovery.hpp"

#include <filesystem>
#include <set>

namespace compactor::detail {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kEntryKeys = {"stage", "plugin", "when", "params"};

std::string stage_of_file(const std::string& file) {
  std::string name = fs::path(file).filename().string();
  const std::string prefix = "compactor_stage_";
  return name.substr(prefix.size(), name.size() - prefix.size() - 3);
}

void read_when(ConfigContext& c, const YAML::Node& node, const std::string& path, When& when) {
  const std::string expected = "expected always, over_budget or {messages_over: N}, got ";
  if (node.IsScalar() && (node.Scalar() == "always" || node.Scalar() == "over_budget") && node.Tag() == "?") {
    when.kind = node.Scalar() == "always" ? WhenKind::always : WhenKind::over_budget;
    return;
  }
  if (node.IsMap()) {
    if (!c.r.check_mapping(node, path, {"messages_over"})) return;
    if (auto n = c.r.member(node, path, "messages_over", true))
      if (auto v = c.r.integer(*n, join_path(path, "messages_over"), 0)) {
        when.kind = WhenKind::messages_over;
        when.messages = static_cast<std::uint64_t>(*v);
      }
    return;
  }
  c.r.error(node, path, expected + YamlReader::describe(node));
}

void resolve_stage(ConfigContext& c, PipelineEntryConfig& entry, const std::optional<YAML::Node>& plugin_node) {
  PluginRegistry& registry = PluginRegistry::instance();
  std::string file;
  if (!entry.plugin.empty()) {
    file = c.resolve(entry.plugin);
    std::error_code ec;
    std::string path = join_path(entry.yaml_path, "plugin");
    if (!fs::is_regular_file(file, ec)) {
      c.r.error(*plugin_node, path, "no such plugin file: " + file);
      return;
    }
    auto loaded = registry.load_for(file, "stage", entry.stage);
    if (!loaded) {
      c.r.error(*plugin_node, path, loaded.error().message);
      c.plugin_failure = true;
      return;
    }
    const RegisteredStage* found = registry.find_stage(entry.stage);
    if (found == nullptr || found->plugin != loaded.value()) {
      c.r.error(*plugin_node, path, file + " does not provide stage \"" + entry.stage + "\" (it provides: " +
                                       list(loaded.value()->stages) + ")");
      return;
    }
    entry.registered = found;
    return;
  }
  if (auto found_file = find_provider("stage", entry.stage, c.search_dirs())) {
    auto loaded = registry.load_for(*found_file, "stage", entry.stage);
    if (!loaded) {
      c.r.error(entry.location, join_path(entry.yaml_path, "stage"), loaded.error().message);
      c.plugin_failure = true;
      return;
    }
    entry.registered = registry.find_stage(entry.stage);
    if (entry.registered == nullptr)
      c.r.error(entry.location, join_path(entry.yaml_path, "stage"),
                *found_file + " does not provide stage \"" + entry.stage + "\" (it provides: " + list(loaded.value()->stages) + ")");
    return;
  }
  // A stage registered in-process (tests, embedding hosts).
  const RegisteredStage* builtin = registry.find_stage(entry.stage);
  if (builtin != nullptr && builtin->plugin == nullptr) entry.registered = builtin;
}

}  // namespace

const std::string& StageEntries::known_stages(const ConfigContext& c) {
  if (!known_stages_) {
    std::set<std::string> known;
    // Every stage a plugin file declares (several per file are found by any of their names).
    for (const auto& f : list_plugin_files(c.search_dirs(), "compactor_")) {
      PluginProbe probe = probe_plugin(f);
      for (const auto& p : probe.provides)
        if (p.rfind("stage:", 0) == 0) known.insert(p.substr(6));
      if (probe.provides.empty() && f.find("compactor_stage_") != std::string::npos) known.insert(stage_of_file(f));
    }
    for (const auto& n : PluginRegistry::instance().stage_names()) known.insert(n);
    known_stages_ = known.empty() ? "none" : list(std::vector<std::string>(known.begin(), known.end()));
  }
  return *known_stages_;
}

void StageEntries::read(ConfigContext& c, const YAML::Node& root, const std::string& key, bool required,
                        std::vector<PipelineEntryConfig>& out, std::vector<YAML::Node>& params_nodes) {
  auto list_node = c.r.member(root, "", key, required);
  if (!list_node) return;
  if (!list_node->IsSequence()) {
    c.r.error(*list_node, key, "expected a sequence of stages, got " + YamlReader::describe(*list_node));
    return;
  }
  for (std::size_t i = 0; i < list_node->size(); ++i) {
    YAML::Node node = (*list_node)[i];
    PipelineEntryConfig entry;
    entry.yaml_path = key + "[" + std::to_string(i) + "]";
    entry.location = c.r.location(node);
    if (!c.r.check_mapping(node, entry.yaml_path, kEntryKeys)) continue;
    std::optional<YAML::Node> plugin_node = c.r.member(node, entry.yaml_path, "plugin", false);
    if (plugin_node)
      if (auto p = c.r.string(*plugin_node, join_path(entry.yaml_path, "plugin"))) entry.plugin = *p;
    if (auto when = c.r.member(node, entry.yaml_path, "when", false)) read_when(c, *when, join_path(entry.yaml_path, "when"), entry.when);
    YAML::Node params;
    if (auto p = c.r.member(node, entry.yaml_path, "params", false)) params = *p;
    if (auto stage = c.r.member(node, entry.yaml_path, "stage", true)) {
      if (auto s = c.r.string(*stage, join_path(entry.yaml_path, "stage"))) {
        entry.stage = *s;
        std::size_t before = c.r.errors().size();
        resolve_stage(c, entry, plugin_node);
        if (entry.registered == nullptr && c.r.errors().size() == before) {
          // Every unknown stage is reported (loading goes on), each with the names that exist.
          c.r.error(*stage, join_path(entry.yaml_path, "stage"),
                    "unknown stage \"" + entry.stage + "\"; known stages: " + known_stages(c));
        }
      }
    }
    out.push_back(std::move(entry));
    params_nodes.push_back(params);
  }
}

void read_stage_params(ConfigContext& c, PipelineEntryConfig& entry, const YAML::Node* params) {
  if (entry.registered == nullptr) return;
  const StageInfo& info = *entry.registered->info;
  std::string path = join_path(entry.yaml_path, "params");
  if (params != nullptr && !params->IsNull() && !params->IsMap()) {
    c.r.error(*params, path, "expected a mapping of parameters, got " + YamlReader::describe(*params));
    return;
  }
  const bool given = params != nullptr && params->IsMap();
  c.read_param_map(info.params, info.name, given ? params : nullptr, path, {}, given ? c.r.location(*params) : entry.location,
                   given ? path : entry.yaml_path, entry.params);
}

void print_stage_entries(std::string& out, const std::string& key, const std::vector<PipelineEntryConfig>& entries) {
  if (entries.empty()) {
    out += key + ": []\n";
    return;
  }
  out += key + ":\n";
  for (const auto& e : entries) {
    out += "  - stage: " + quoted(e.stage) + "\n";
    if (e.registered != nullptr && e.registered->plugin != nullptr) {
      const LoadedPlugin& p = *e.registered->plugin;
      out += "    plugin: " + quoted(p.file) + "  # plugin " + p.name + " " + p.version + ", API " +
             std::to_string(p.api_version) + "\n";
    }
    out += "    when: " + e.when.to_string() + "\n";
    print_params(out, "    ", e.params);
  }
}

}  // namespace compactor::detail
