#include "host/pipeline_config.hpp"

#include "host/archive_section.hpp"
#include "host/budget_section.hpp"
#include "host/checkers_section.hpp"
#include "host/config_context.hpp"
#include "host/meter_section.hpp"
#include "host/pipeline_section.hpp"
#include "host/store_section.hpp"
#include "host/summarizer_section.hpp"
#include "host/yaml_reader.hpp"
#include "host/yaml_writer.hpp"
#include "loader/plugin_discovery.hpp"
#include "model/conversation_reader.hpp"

#include <algorithm>
#include <filesystem>

namespace compactor {

namespace fs = std::filesystem;
using namespace detail;

std::string When::to_string() const {
  switch (kind) {
    case WhenKind::always: return "always";
    case WhenKind::over_budget: return "over_budget";
    case WhenKind::messages_over: return "{messages_over: " + std::to_string(messages) + "}";
  }
  return "?";
}

namespace {

// The config's sections, each read by the part that owns it (host/*_section.hpp, serve_config.hpp):
// the loader reads the file and hands them their nodes in an order that lets a section rely on
// the ones it needs (the meter on the budget, the plugins on plugin_dirs, the window on prices).
const std::vector<std::string> kTopKeys = {"version", "budget", "meter", "recent", "archive", "summarizer",
                                           "checkers", "plugin_dirs", "pipeline", "on_prompt_too_long", "prices", "limits",
                                           "serve", "store"};
class ConfigLoader {
 public:
  explicit ConfigLoader(std::string file) : r_(file), c_{r_, fs::path(file).parent_path(), config_} {
    if (c_.base.empty()) c_.base = ".";
    config_.file = std::move(file);
  }

  ConfigLoadResult load();
  ServeSettingsLoadResult load_serve_settings();

 private:
  std::optional<YAML::Node> read_root(std::vector<std::string>& errors);
  void read_sections(const YAML::Node& root);
  void read_plugin_dirs(const YAML::Node& root);
  void read_prices(const YAML::Node& root);
  void read_serve(const YAML::Node& root);

  YamlReader r_;
  PipelineConfig config_;
  ConfigContext c_;
  SourceLocation archive_dir_at_;  // archive.dir, when written
};

// The file's YAML root, a mapping; nothing (with the errors) when it is not one.
std::optional<YAML::Node> ConfigLoader::read_root(std::vector<std::string>& errors) {
  // Read like every input: a regular file (or stdin), within the input size limit.
  auto text = read_input_bytes(config_.file);
  if (!text) {
    errors.push_back(text.error().message);
    return std::nullopt;
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    errors.push_back(config_.file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": YAML syntax error: " + e.msg);
    return std::nullopt;
  }
  if (!root.IsMap()) {
    r_.error(SourceLocation{config_.file, 1, 1}, "", "expected a mapping with version: 1, got " + YamlReader::describe(root));
    errors = r_.errors();
    return std::nullopt;
  }
  return root;
}

ServeSettingsLoadResult ConfigLoader::load_serve_settings() {
  ServeSettingsLoadResult result;
  auto root = read_root(result.errors);
  if (!root) return result;
  archive_dir_at_ = read_archive_section(c_, *root);
  // The budget as a run measures it (its meter and price table, no plugin): serve forwards a call
  // no stage can act on without a worker (host/call_triage.hpp).
  const BudgetNodes budget = read_budget_section(c_, *root);
  read_meter_section(c_, *root, budget);
  read_prices(*root);
  settle_window(c_, budget);
  read_serve(*root);
  read_store_section(r_, *root, config_.store);
  // serve keeps continuity state in the store: in Redis it is signed, so a secret is needed.
  if (config_.store.kind == StoreConfig::Kind::redis && r_.errors().empty())
    if (auto secrets = read_state_secrets(config_.store); !secrets)
      r_.error(*r_.member(*root, "", "store", false), "store",
               "serve signs the continuity state it keeps in Redis, so that whoever can write Redis cannot plant a history, and " +
                   secrets.error().message + ": add `state_secret_file: /etc/compactor/state.secret` (a file of one line, "
                   "`head -c 32 /dev/urandom | base64` makes one) or `state_secret_env: NAME` to store:");
  result.errors = r_.errors();
  if (result.errors.empty())
    result.settings = ServeSettings{config_.serve.value_or(ServeConfig{}), config_.archive_dir, config_.store, config_.warnings,
                                    std::make_shared<const PipelineConfig>(config_)};
  return result;
}

ConfigLoadResult ConfigLoader::load() {
  ConfigLoadResult result;
  auto read = read_root(result.errors);
  if (!read) return result;
  const YAML::Node& root = *read;
  r_.check_mapping(root, "", kTopKeys);
  if (auto v = r_.member(root, "", "version", true)) {
    if (auto n = r_.integer(*v, "version", 1, 1); !n) {
      // integer() has reported it
    }
  }
  const BudgetNodes budget = read_budget_section(c_, root);
  read_meter_section(c_, root, budget);
  read_sections(root);
  archive_dir_at_ = read_archive_section(c_, root);
  CheckersSection checkers;
  checkers.read(c_, root);
  read_plugin_dirs(root);

  std::vector<YAML::Node> pipeline_params, reactive_params;
  checkers.resolve(c_);
  read_summarizer_section(c_, root);
  StageEntries entries;
  entries.read(c_, root, "pipeline", true, config_.pipeline, pipeline_params);
  entries.read(c_, root, "on_prompt_too_long", false, config_.on_prompt_too_long, reactive_params);

  for (std::size_t i = 0; i < config_.pipeline.size(); ++i)
    read_stage_params(c_, config_.pipeline[i], pipeline_params[i].IsDefined() ? &pipeline_params[i] : nullptr);
  for (std::size_t i = 0; i < config_.on_prompt_too_long.size(); ++i)
    read_stage_params(c_, config_.on_prompt_too_long[i], reactive_params[i].IsDefined() ? &reactive_params[i] : nullptr);
  read_prices(root);
  settle_window(c_, budget);
  read_serve(root);
  read_store_section(r_, root, config_.store);
  check_summary_lengths(c_);

  result.errors = r_.errors();
  result.plugin_failure = c_.plugin_failure;
  if (result.errors.empty()) result.config = std::move(config_);
  return result;
}

// `recent: {exchanges}` and `limits: {stage_timeout_ms}`: the host's own, one key each.
void ConfigLoader::read_sections(const YAML::Node& root) {
  if (auto recent = r_.member(root, "", "recent", false); recent && r_.check_mapping(*recent, "recent", {"exchanges"})) {
    if (auto e = r_.member(*recent, "recent", "exchanges", true))
      if (auto n = r_.integer(*e, "recent.exchanges", 0, 1000)) config_.recent_exchanges = static_cast<std::size_t>(*n);
  }
  if (auto limits = r_.member(root, "", "limits", false); limits && r_.check_mapping(*limits, "limits", {"stage_timeout_ms"})) {
    if (auto t = r_.member(*limits, "limits", "stage_timeout_ms", false))
      if (auto n = r_.integer(*t, "limits.stage_timeout_ms", 1, 86400000)) config_.stage_timeout_ms = *n;
  }
}

// `plugin_dirs:`, resolved against the config's folder: read before the stages and checkers,
// which are searched there.
void ConfigLoader::read_plugin_dirs(const YAML::Node& root) {
  if (auto dirs = r_.member(root, "", "plugin_dirs", false)) {
    if (!dirs->IsSequence()) {
      r_.error(*dirs, "plugin_dirs", "expected a sequence of folders, got " + YamlReader::describe(*dirs));
    } else {
      for (std::size_t i = 0; i < dirs->size(); ++i) {
        std::string path = "plugin_dirs[" + std::to_string(i) + "]";
        if (auto d = r_.string((*dirs)[i], path)) {
          std::string resolved = c_.resolve(*d);
          std::error_code ec;
          if (!fs::is_directory(resolved, ec))
            r_.error((*dirs)[i], path, "no such folder: " + resolved);
          else
            config_.plugin_dirs.push_back(resolved);
        }
      }
    }
  }
}

// `prices: FILE`, resolved against the config's folder: what the run report prices a
// summarizer's model calls with.
void ConfigLoader::read_prices(const YAML::Node& root) {
  auto node = r_.member(root, "", "prices", false);
  if (!node) return;
  auto p = r_.string(*node, "prices");
  if (!p) return;
  config_.prices_file = c_.resolve(*p);
  auto table = read_price_table(config_.prices_file);
  if (!table) {
    r_.error(*node, "prices", table.error().message);
    return;
  }
  config_.prices = std::make_shared<const PriceTable>(std::move(table).value());
}

void ConfigLoader::read_serve(const YAML::Node& root) {
  auto serve = r_.member(root, "", "serve", false);
  if (!serve) return;
  ServeConfig s;
  read_serve_config(r_, *serve, c_.base.string(), s, config_.warnings);
  // An MCP client started from another folder resolves a relative archive from there.
  if (config_.restore_via == "mcp" && fs::path(config_.archive_dir).is_relative())
    c_.warning(archive_dir_at_, "archive.dir",
               "\"" + config_.archive_dir + "\" is relative while archive.restore_via is mcp: `compactor mcp` started from another "
               "folder looks elsewhere; give an absolute folder");
  config_.serve = s;
}

}  // namespace

ConfigLoadResult load_pipeline_config(const std::string& file) { return ConfigLoader(file).load(); }

ServeSettingsLoadResult load_serve_settings(const std::string& file) { return ConfigLoader(file).load_serve_settings(); }

Expected<ConfigPluginPaths> config_plugin_paths(const std::string& file) {
  auto text = read_input_bytes(file);
  if (!text) return text.error();
  fs::path base = fs::path(file).parent_path();
  if (base.empty()) base = ".";
  ConfigPluginPaths paths;
  try {
    YAML::Node root = YAML::Load(*text);
    if (root.IsMap()) {
      if (root["plugin_dirs"] && root["plugin_dirs"].IsSequence())
        for (const auto& d : root["plugin_dirs"])
          if (d.IsScalar()) paths.dirs.push_back(resolve_path(base, d.Scalar()));
      for (const char* list : {"pipeline", "on_prompt_too_long"})
        if (root[list] && root[list].IsSequence())
          for (const auto& entry : root[list])
            if (entry.IsMap() && entry["plugin"] && entry["plugin"].IsScalar()) paths.files.push_back(resolve_path(base, entry["plugin"].Scalar()));
      if (root["summarizer"] && root["summarizer"].IsMap() && root["summarizer"]["plugin"] && root["summarizer"]["plugin"].IsScalar())
        paths.files.push_back(resolve_path(base, root["summarizer"]["plugin"].Scalar()));
      if (const YAML::Node checkers = root["checkers"]; checkers.IsMap() && checkers["enabled"] && checkers["enabled"].IsSequence())
        for (const auto& entry : checkers["enabled"])
          if (entry.IsMap() && entry["plugin"] && entry["plugin"].IsScalar()) paths.files.push_back(resolve_path(base, entry["plugin"].Scalar()));
    }
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                 ": YAML syntax error: " + e.msg};
  }
  paths.dirs.push_back((base / "plugins").lexically_normal().string());
  for (const auto& d : env_plugin_dirs()) paths.dirs.push_back(d);
  return paths;
}

Expected<ParamValues> validated_params(const ParamSchema& schema, const ParamValues& given, const std::string& owner) {
  ParamValues out;
  std::vector<std::string> names;
  for (const ParamSpec& p : schema) names.push_back(p.name);
  for (const auto& given_param : given.all()) {
    const auto& [name, value] = given_param;
    // clang 14 (clang-tidy's) cannot capture a structured binding: the pair is captured.
    auto spec = std::find_if(schema.begin(), schema.end(), [&](const ParamSpec& p) { return p.name == given_param.first; });
    if (spec == schema.end())
      return Error{owner + ": params." + name + ": unknown parameter; " + owner + " takes: " + (names.empty() ? "none" : list(names))};
    if (auto expected = spec->check(value)) return Error{owner + ": params." + name + ": expected " + *expected + ", got " + to_string(value)};
    out.set(name, value);
  }
  for (const ParamSpec& p : schema) {
    if (out.has(p.name)) continue;
    if (!p.default_value) return Error{owner + ": missing required parameter \"" + p.name + "\" (" + p.expectation() + ")"};
    out.set(p.name, *p.default_value);
  }
  return out;
}

std::string print_pipeline(const PipelineConfig& c) {
  std::string out = "# The resolved pipeline (compactor print-pipeline); feeding it back yields the same pipeline.\n";
  out += "version: 1\n";
  print_budget_section(out, c);
  print_meter_section(out, c);
  out += "recent:\n  exchanges: " + std::to_string(c.recent_exchanges) + "\n";
  print_archive_section(out, c);
  print_store_section(out, c.store);
  out += "limits:\n  stage_timeout_ms: " + std::to_string(c.stage_timeout_ms) + "\n";
  print_summarizer_section(out, c);
  if (!c.prices_file.empty()) out += "prices: " + quoted(absolute_path(c.prices_file)) + "\n";
  print_checkers_section(out, c);
  if (c.plugin_dirs.empty()) {
    out += "plugin_dirs: []\n";
  } else {
    out += "plugin_dirs:\n";
    for (const auto& d : c.plugin_dirs) out += "  - " + quoted(absolute_path(d)) + "\n";
  }
  print_stage_entries(out, "pipeline", c.pipeline);
  print_stage_entries(out, "on_prompt_too_long", c.on_prompt_too_long);
  if (c.serve) print_serve_config(out, *c.serve);
  return out;
}

}  // namespace compactor
