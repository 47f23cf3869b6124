#include "host/checkers_section.hpp"

#include "host/yaml_writer.hpp"
#include "loader/plugin_discovery.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

namespace compactor::detail {

namespace fs = std::filesystem;

void CheckersSection::read(ConfigContext& c, const YAML::Node& root) {
  if (auto section = c.r.member(root, "", "checkers", false);
      section && c.r.check_mapping(*section, "checkers", {"enabled", "replace_builtins", "on_violation"})) {
    at_ = c.r.location(*section);
    if (auto enabled = c.r.member(*section, "checkers", "enabled", false)) {
      if (!enabled->IsSequence()) {
        c.r.error(*enabled, "checkers.enabled",
                  "expected a sequence of checkers (a name, or {checker, plugin, params}), got " + YamlReader::describe(*enabled));
      } else {
        enabled_ = *enabled;
        for (std::size_t i = 0; i < enabled->size(); ++i) read_entry(c, (*enabled)[i], "checkers.enabled[" + std::to_string(i) + "]");
      }
    }
    if (auto r = c.r.member(*section, "checkers", "replace_builtins", false))
      if (auto v = c.r.param(*r, "checkers.replace_builtins", ParamSpec::boolean("replace_builtins", "", false)))
        c.config.replace_builtin_checkers = std::get<bool>(*v);
    if (auto p = c.r.member(*section, "checkers", "on_violation", false))
      if (auto v = c.r.choice(*p, "checkers.on_violation", {"abort", "skip"}))
        c.config.on_violation = *v == "skip" ? ViolationPolicy::skip : ViolationPolicy::abort;
  }
}

// One entry of checkers.enabled: a name, or {checker, plugin, params}. Plugin checkers are
// resolved once plugin_dirs is read (resolve).
void CheckersSection::read_entry(ConfigContext& c, const YAML::Node& node, const std::string& path) {
  CheckerEntryConfig entry;
  entry.yaml_path = path;
  entry.location = c.r.location(node);
  Nodes nodes{node, std::nullopt, std::nullopt};
  if (node.IsMap()) {
    if (!c.r.check_mapping(node, path, {"checker", "plugin", "params"})) return;
    auto name = c.r.member(node, path, "checker", true);
    auto n = name ? c.r.string(*name, join_path(path, "checker")) : std::nullopt;
    if (!n) return;
    entry.name = *n;
    nodes.plugin = c.r.member(node, path, "plugin", false);
    if (nodes.plugin) {
      auto p = c.r.string(*nodes.plugin, join_path(path, "plugin"));
      if (!p) return;
      entry.plugin = *p;
    }
    nodes.params = c.r.member(node, path, "params", false);
  } else {
    auto n = c.r.string(node, path);
    if (!n) return;
    entry.name = *n;
  }
  entries_.push_back(std::move(entry));
  nodes_.push_back(std::move(nodes));
}

// Each entry of checkers.enabled resolved (a built-in checker, one a loaded plugin registered,
// the file `plugin:` names, or compactor_checker_<name>.so on the search path) and its params
// validated; then the list that runs: the built-in checkers and these, or these alone.
void CheckersSection::resolve(ConfigContext& c) {
  PluginRegistry& registry = PluginRegistry::instance();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    CheckerEntryConfig& entry = entries_[i];
    const Nodes& nodes = nodes_[i];
    if (!seen.insert(entry.name).second) {
      c.r.error(nodes.entry, entry.yaml_path, "checker \"" + entry.name + "\" is enabled twice");
      continue;
    }
    if (registry.builtin_checker(entry.name) != nullptr) {
      if (nodes.plugin || nodes.params)
        c.r.error(nodes.plugin ? *nodes.plugin : *nodes.params, entry.yaml_path,
                  "\"" + entry.name + "\" is a built-in checker: it takes no plugin and no params");
      continue;
    }
    std::optional<std::string> file;
    if (!entry.plugin.empty()) {
      file = c.resolve(entry.plugin);
      std::error_code ec;
      if (!fs::is_regular_file(*file, ec)) {
        c.r.error(*nodes.plugin, join_path(entry.yaml_path, "plugin"), "no such plugin file: " + *file);
        continue;
      }
    } else if (registry.find_checker(entry.name) == nullptr) {
      file = find_provider("checker", entry.name, c.search_dirs());
    }
    const YAML::Node& at = nodes.plugin ? *nodes.plugin : nodes.entry;
    const std::string at_path = nodes.plugin ? join_path(entry.yaml_path, "plugin") : entry.yaml_path;
    if (file) {
      auto loaded = registry.load_for(*file, "checker", entry.name);
      if (!loaded) {
        c.r.error(at, at_path, loaded.error().message);
        c.plugin_failure = true;
        continue;
      }
      entry.registered = registry.find_checker(entry.name);
      if (entry.registered == nullptr || entry.registered->plugin != *loaded) {
        entry.registered = nullptr;
        c.r.error(at, at_path, *file + " does not register a checker \"" + entry.name + "\" (it provides: " +
                                  list((*loaded)->checkers) + ")");
        continue;
      }
    } else {
      entry.registered = registry.find_checker(entry.name);
    }
    if (entry.registered == nullptr) {
      std::vector<std::string> known;
      for (const BuiltinChecker& b : registry.builtin_checkers()) known.push_back(b.name());
      c.r.error(nodes.entry, entry.yaml_path, "unknown checker \"" + entry.name + "\"; known checkers: " + list(known) +
                                                 ", or a plugin's " + checker_file_name(entry.name) +
                                                 " on the plugin search path (none found)");
      continue;
    }
    const std::string params_path = join_path(entry.yaml_path, "params");
    if (nodes.params && !nodes.params->IsNull() && !nodes.params->IsMap()) {
      c.r.error(*nodes.params, params_path, "expected a mapping of parameters, got " + YamlReader::describe(*nodes.params));
      continue;
    }
    const bool given = nodes.params && nodes.params->IsMap();
    c.read_param_map(entry.registered->info->params, "checker " + entry.name, given ? &*nodes.params : nullptr, params_path, {},
                     given ? c.r.location(*nodes.params) : entry.location, given ? params_path : entry.yaml_path, entry.params);
  }
  settle(c);
}

// The checkers that run: every built-in one and then the others listed, or, with
// replace_builtins, the list as it is, with a warning for each safety checker it leaves out. A
// list that names some built-in checkers but not all is warned about too: they all run, and it
// was probably meant to switch the others off.
void CheckersSection::settle(ConfigContext& c) {
  auto listed = [&](std::string_view name) {
    return std::any_of(entries_.begin(), entries_.end(), [&](const CheckerEntryConfig& e) { return e.name == name; });
  };
  const std::vector<BuiltinChecker>& builtins = PluginRegistry::instance().builtin_checkers();
  std::vector<std::string> left_out, safety;
  for (const BuiltinChecker& b : builtins)
    if (!listed(b.name())) {
      left_out.push_back(b.name());
      if (b.traits.safety) safety.push_back(b.name());
    }
  std::set<std::string> seen;
  if (c.config.replace_builtin_checkers) {
    // The API's own rules run whatever the list says: they are among the checkers that run, so
    // print-pipeline shows them.
    for (const BuiltinChecker& b : builtins)
      if (b.traits.api_rule && !listed(b.name())) {
        CheckerEntryConfig rule;
        rule.name = b.name();
        seen.insert(rule.name);
        c.config.checkers.push_back(std::move(rule));
      }
    for (const CheckerEntryConfig& e : entries_)
      if (seen.insert(e.name).second) c.config.checkers.push_back(e);
    if (!safety.empty())
      c.warning(enabled_ ? c.r.location(*enabled_) : at_, "checkers.enabled",
                "replace_builtins leaves out the built-in safety checker" + std::string(safety.size() == 1 ? " " : "s ") +
                  list(safety) + ": a stage that breaks " + (safety.size() == 1 ? "its rule" : "their rules") + " is committed");
    return;
  }
  for (const BuiltinChecker& b : builtins) {
    CheckerEntryConfig builtin;
    builtin.name = b.name();
    seen.insert(builtin.name);
    c.config.checkers.push_back(std::move(builtin));
  }
  bool names_builtin = false;
  for (const CheckerEntryConfig& e : entries_) {
    names_builtin = names_builtin || PluginRegistry::instance().builtin_checker(e.name) != nullptr;
    if (seen.insert(e.name).second) c.config.checkers.push_back(e);
  }
  if (names_builtin && !left_out.empty())
    c.warning(c.r.location(*enabled_), "checkers.enabled",
              "names built-in checkers but not " + list(left_out) +
                ", which run all the same: enabled adds to the built-in checkers (replace_builtins: true runs only those listed)");
}

// `checkers:` as the run has them: built-in names in a flow list when that is all there is, else
// one entry a line, a plugin checker with its file and params.
void print_checkers_section(std::string& out, const PipelineConfig& c) {
  out += "checkers:\n";
  if (std::all_of(c.checkers.begin(), c.checkers.end(), [](const CheckerEntryConfig& e) { return e.registered == nullptr; })) {
    std::vector<std::string> names;
    for (const CheckerEntryConfig& e : c.checkers) names.push_back(e.name);
    out += "  enabled: [" + list(names) + "]\n";
  } else {
    out += "  enabled:\n";
    for (const CheckerEntryConfig& e : c.checkers) {
      if (e.registered == nullptr) {
        out += "    - " + e.name + "\n";
        continue;
      }
      out += "    - checker: " + quoted(e.name) + "\n";
      if (const LoadedPlugin* p = e.registered->plugin)
        out += "      plugin: " + quoted(p->file) + "  # plugin " + p->name + " " + p->version + ", API " + std::to_string(p->api_version) + "\n";
      print_params(out, "      ", e.params);
    }
  }
  if (c.replace_builtin_checkers) out += "  replace_builtins: true\n";
  out += "  on_violation: " + std::string(c.on_violation == ViolationPolicy::skip ? "skip" : "abort") + "\n";
}

}  // namespace compactor::detail
