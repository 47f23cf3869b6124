#include "host/summarizer_section.hpp"

#include "host/yaml_writer.hpp"
#include "loader/plugin_discovery.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <set>

namespace compactor::detail {

namespace fs = std::filesystem;

namespace {

// The host's own keys of `summarizer:` (beside kind and plugin): how a summary is waited for.
void read_background_keys(ConfigContext& c, const YAML::Node& s) {
  if (auto mode = c.r.member(s, "summarizer", "mode", false))
    if (auto m = c.r.choice(*mode, "summarizer.mode", {"background", "inline"}))
      c.config.summarizer_mode_written = true, c.config.summarizer_mode = *m == "inline" ? PipelineConfig::SummarizerMode::inline_call : PipelineConfig::SummarizerMode::background;
  if (auto t = c.r.member(s, "summarizer", "background_timeout_s", false))
    if (auto v = c.r.integer(*t, "summarizer.background_timeout_s", 1, 86400)) c.config.background_timeout_s = *v;
  if (auto a = c.r.member(s, "summarizer", "background_attempts", false))
    if (auto v = c.r.integer(*a, "summarizer.background_attempts", 1, 100)) c.config.background_attempts = *v;
}

}  // namespace

void read_summarizer_section(ConfigContext& c, const YAML::Node& root) {
  PluginRegistry& registry = PluginRegistry::instance();
  std::optional<YAML::Node> section, kind_node, plugin_node;
  if (auto s = c.r.member(root, "", "summarizer", false)) {
    if (!s->IsMap()) {
      c.r.error(*s, "summarizer", "expected a mapping (kind, plugin and the backend's params), got " + YamlReader::describe(*s));
      return;
    }
    section = *s;
    kind_node = c.r.member(*s, "summarizer", "kind", true);
    plugin_node = c.r.member(*s, "summarizer", "plugin", false);
    read_background_keys(c, *s);
    if (kind_node) {
      auto k = c.r.string(*kind_node, "summarizer.kind");
      if (!k) return;
      c.config.summarizer_kind = *k;
    }
  }
  std::optional<std::string> file;
  if (plugin_node) {
    auto p = c.r.string(*plugin_node, "summarizer.plugin");
    if (!p) return;
    file = c.resolve(*p);
    std::error_code ec;
    if (!fs::is_regular_file(*file, ec)) {
      c.r.error(*plugin_node, "summarizer.plugin", "no such plugin file: " + *file);
      return;
    }
  } else if (registry.find_summarizer(c.config.summarizer_kind) == nullptr) {
    file = find_provider("summarizer", c.config.summarizer_kind, c.search_dirs());
  }
  if (file) {
    auto loaded = registry.load_for(*file, "summarizer", c.config.summarizer_kind);
    if (!loaded) {
      c.r.error(plugin_node ? c.r.location(*plugin_node) : c.r.location(*kind_node), plugin_node ? "summarizer.plugin" : "summarizer.kind",
                loaded.error().message);
      c.plugin_failure = true;
      return;
    }
  }
  c.config.summarizer = registry.find_summarizer(c.config.summarizer_kind);
  if (c.config.summarizer == nullptr) {
    SourceLocation at = kind_node ? c.r.location(*kind_node) : SourceLocation{c.config.file, 1, 1};
    // Loaded kinds and the ones a plugin file on the search path is named for.
    std::set<std::string> known;
    for (const auto& n : registry.summarizer_names()) known.insert(n);
    const std::string prefix = "compactor_summarizer_";
    for (const auto& f : list_plugin_files(c.search_dirs(), prefix)) {
      std::string name = fs::path(f).filename().string();
      known.insert(name.substr(prefix.size(), name.size() - prefix.size() - 3));
    }
    c.r.error(at, "summarizer.kind", "unknown summarizer \"" + c.config.summarizer_kind + "\"; known summarizers: " +
                                        list(std::vector<std::string>(known.begin(), known.end())));
    return;
  }
  // The backend's params sit flat beside `kind` and `plugin`, validated against its schema.
  c.read_param_map(c.config.summarizer->info->params, "summarizer " + c.config.summarizer_kind, section ? &*section : nullptr,
                   "summarizer", {"kind", "plugin", "mode", "background_timeout_s", "background_attempts"}, section ? c.r.location(*section) : SourceLocation{c.config.file, 1, 1},
                   "summarizer", c.config.summarizer_params);
}

void check_summary_lengths(ConfigContext& c) {
  if (c.config.summarizer == nullptr || !c.config.summarizer_params.has("max_output_tokens")) return;
  const std::int64_t tokens = c.config.summarizer_params.integer("max_output_tokens");
  if (tokens == 0) return;  // 0: derived from each stage's max_chars at every call
  for (const auto* list : {&c.config.pipeline, &c.config.on_prompt_too_long})
    for (const auto& e : *list)
      if (e.params.has("max_chars") && e.params.integer("max_chars") > tokens * 4)
        c.r.error(e.location, join_path(e.yaml_path, "params.max_chars"),
                  fmt::format("{} chars cannot be written in summarizer.max_output_tokens {} (at least one token per 4 "
                              "chars: raise max_output_tokens to {} or leave it out)",
                              e.params.integer("max_chars"), tokens, (e.params.integer("max_chars") + 3) / 4));
}

void print_summarizer_section(std::string& out, const PipelineConfig& c) {
  out += "summarizer:\n  kind: " + quoted(c.summarizer_kind) + "\n";
  // The host's keys when not their defaults (a resolved config reads back the same either way).
  const PipelineConfig defaults;
  if (c.summarizer_mode != defaults.summarizer_mode) out += "  mode: inline\n";
  if (c.background_timeout_s != defaults.background_timeout_s) out += fmt::format("  background_timeout_s: {}\n", c.background_timeout_s);
  if (c.background_attempts != defaults.background_attempts) out += fmt::format("  background_attempts: {}\n", c.background_attempts);
  if (c.summarizer != nullptr && c.summarizer->plugin != nullptr)
    out += "  plugin: " + quoted(c.summarizer->plugin->file) + "  # plugin " + c.summarizer->plugin->name + " " +
           c.summarizer->plugin->version + "\n";
  // Params are names and numbers; a key is only ever named by its environment variable.
  for (const auto& [name, value] : c.summarizer_params.all()) out += "  " + name + ": " + yaml_value(value) + "\n";
}

}  // namespace compactor::detail
