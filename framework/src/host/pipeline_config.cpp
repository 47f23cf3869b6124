#include "host/pipeline_config.hpp"

#include "model/conversation_reader.hpp"

#include "loader/builtin_checkers.hpp"
#include "loader/plugin_discovery.hpp"
#include "host/yaml_reader.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace compactor {

namespace fs = std::filesystem;
using detail::join_path;
using detail::YamlReader;

Budget WindowBudget::of(std::uint64_t window) const {
  const auto share = [&](double f) { return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(f * static_cast<double>(window))); };
  return Budget{SizeUnit::tokens, share(trigger), std::min(share(target), share(trigger))};
}

std::string When::to_string() const {
  switch (kind) {
    case WhenKind::always: return "always";
    case WhenKind::over_budget: return "over_budget";
    case WhenKind::messages_over: return "{messages_over: " + std::to_string(messages) + "}";
  }
  return "?";
}

namespace {

const std::vector<std::string> kTopKeys = {"version", "budget", "meter", "recent", "archive", "summarizer",
                                           "checkers", "plugin_dirs", "pipeline", "on_prompt_too_long", "prices", "limits",
                                           "serve", "store"};
const std::vector<std::string> kEntryKeys = {"stage", "plugin", "when", "params"};
constexpr std::string_view kNoTls =
    "TLS needs hiredis 1.0 or later, and Debian 12 ships 0.14: reach Redis over a private network or through a TLS "
    "tunnel on loopback (stunnel, spiped; docs/store.md)";

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string resolve(const fs::path& base, const std::string& path) {
  fs::path p(path);
  return (p.is_absolute() ? p : base / p).lexically_normal().string();
}

std::string stage_of_file(const std::string& file) {
  std::string name = fs::path(file).filename().string();
  const std::string prefix = "compactor_stage_";
  return name.substr(prefix.size(), name.size() - prefix.size() - 3);
}

// redis://HOST[:PORT][/DB] or unix:///PATH[?db=DB] into `out`; a problem, said as the rest of the
// config says them, otherwise. A password in the URL is refused: it would be logged and copied
// with the config; it comes from the variable password_env names.
std::optional<std::string> parse_redis_url(const std::string& url, StoreConfig& out) {
  const std::string expected = "expected redis://HOST:PORT/DB or unix:///PATH?db=DB, got \"" + url + "\"";
  auto number = [](std::string_view text, int max) -> std::optional<int> {
    if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    int n = std::stoi(std::string(text));
    return n <= max ? std::optional<int>(n) : std::nullopt;
  };
  std::string_view rest = url;
  if (rest.starts_with("rediss://")) return std::string(kNoTls);
  if (rest.starts_with("unix://")) {
    rest.remove_prefix(7);
    std::size_t q = rest.find('?');
    out.socket = std::string(rest.substr(0, q));
    if (out.socket.empty() || out.socket.front() != '/') return expected;
    if (q != std::string_view::npos) {
      auto db = rest.substr(q + 1).starts_with("db=") ? number(rest.substr(q + 4), 15) : std::nullopt;
      if (!db) return expected;
      out.db = *db;
    }
    return std::nullopt;
  }
  if (!rest.starts_with("redis://")) return expected;
  rest.remove_prefix(8);
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos)
    return "a password or user in the URL would be logged and copied with the config: give store.username and "
           "store.password_env (the variable holding the password), got \"" + url + "\"";
  if (slash != std::string_view::npos) {
    auto db = number(rest.substr(slash + 1), 15);
    if (!db) return expected;
    out.db = *db;
  }
  std::size_t colon = authority.rfind(':');
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find("]:");
    colon = close == std::string_view::npos ? std::string_view::npos : close + 1;
    authority = authority.substr(1);
    if (colon != std::string_view::npos) --colon;
    out.host = std::string(authority.substr(0, colon == std::string_view::npos ? authority.find(']') : colon - 1));
  } else {
    out.host = std::string(authority.substr(0, colon));
  }
  if (colon != std::string_view::npos) {
    auto port = number(authority.substr(colon + 1), 65535);
    if (!port || *port == 0) return expected;
    out.port = *port;
  }
  if (out.host.empty()) return expected;
  return std::nullopt;
}

// `store: {kind, url, username, password_env, tls, prefix, timeout_ms, state_ttl_s, superseded_ttl_s}`.
void read_store(YamlReader& r, const YAML::Node& root, StoreConfig& config) {
  auto store = r.member(root, "", "store", false);
  if (!store || !r.check_mapping(*store, "store", {"kind", "url", "username", "password_env", "tls", "prefix", "timeout_ms", "state_ttl_s",
                                                   "superseded_ttl_s"}))
    return;
  StoreConfig s;
  if (auto k = r.member(*store, "store", "kind", true))
    if (auto v = r.choice(*k, "store.kind", {"folder", "redis"})) s.kind = *v == "redis" ? StoreConfig::Kind::redis : StoreConfig::Kind::folder;
  const bool redis = s.kind == StoreConfig::Kind::redis;
  auto redis_only = [&](const char* key) {
    auto node = r.member(*store, "store", key, false);
    if (node && !redis) {
      r.error(*node, std::string("store.") + key, "only a redis store has this key (kind is folder: archive.dir holds everything)");
      return std::optional<YAML::Node>();
    }
    return node;
  };
  s.url = redis ? "redis://127.0.0.1:6379/0" : "";
  if (auto u = redis_only("url"))
    if (auto v = r.string(*u, "store.url")) {
      s.url = *v;
      if (auto problem = parse_redis_url(*v, s)) r.error(*u, "store.url", *problem);
    }
  if (auto u = redis_only("username"))
    if (auto v = r.string(*u, "store.username")) s.username = *v;
  if (auto p = redis_only("password_env"))
    if (auto v = r.string(*p, "store.password_env")) {
      if (v->empty() || v->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
        r.error(*p, "store.password_env", "expected the name of an environment variable, got \"" + *v + "\"");
      else
        s.password_env = *v;
    }
  if (auto t = redis_only("tls"))
    if (auto v = r.param(*t, "store.tls", ParamSpec::boolean("tls", "", false)); v && std::get<bool>(*v)) r.error(*t, "store.tls", std::string(kNoTls));
  if (auto p = redis_only("prefix"))
    if (auto v = r.string(*p, "store.prefix")) {
      if (v->empty() || v->size() > 64 || v->find_first_of("{}: \t\r\n") != std::string::npos)
        r.error(*p, "store.prefix", "expected 1 to 64 characters without braces, colons or spaces, got \"" + *v + "\"");
      else
        s.prefix = *v;
    }
  if (auto t = redis_only("timeout_ms"))
    if (auto n = r.integer(*t, "store.timeout_ms", 1, 60000)) s.timeout_ms = *n;
  if (auto t = redis_only("state_ttl_s"))
    if (auto n = r.integer(*t, "store.state_ttl_s", 60, std::int64_t{10} * 365 * 24 * 3600)) s.state_ttl_s = *n;
  if (auto t = redis_only("superseded_ttl_s"))
    if (auto n = r.integer(*t, "store.superseded_ttl_s", 1, std::int64_t{10} * 365 * 24 * 3600)) s.superseded_ttl_s = *n;
  config = s;
}

class ConfigLoader {
 public:
  explicit ConfigLoader(std::string file) : r_(file), base_(fs::path(file).parent_path()) {
    if (base_.empty()) base_ = ".";
    config_.file = std::move(file);
  }

  ConfigLoadResult load();
  ServeSettingsLoadResult load_serve_settings();

 private:
  std::optional<YAML::Node> read_root(std::vector<std::string>& errors);
  void read_budget(const YAML::Node& root);
  void read_window_budget(const YAML::Node& budget);
  void settle_window();
  void read_sections(const YAML::Node& root);
  void read_archive(const YAML::Node& root);
  void read_meter(const YAML::Node& root);
  void read_entries(const YAML::Node& root, const std::string& key, bool required, std::vector<PipelineEntryConfig>& out,
                    std::vector<YAML::Node>& params_nodes);
  void read_when(const YAML::Node& node, const std::string& path, When& when);
  void read_summarizer(const YAML::Node& root);
  void read_checker_entry(const YAML::Node& node, const std::string& path);
  void resolve_checkers();
  void settle_checkers();
  void warning(const SourceLocation& at, const std::string& path, const std::string& what) {
    config_.warnings.push_back(at.to_string() + ": " + path + ": " + what);
  }
  std::vector<std::string> search_dirs() const;
  const std::string& known_stages();
  void resolve_stage(PipelineEntryConfig& entry, const std::optional<YAML::Node>& plugin_node);
  void read_params(PipelineEntryConfig& entry, const YAML::Node* params);
  void read_param_map(const ParamSchema& schema, const std::string& owner, const YAML::Node* map, const std::string& path,
                      const std::set<std::string>& host_keys, const SourceLocation& missing_at,
                      const std::string& missing_path, ParamValues& out);
  void read_prices(const YAML::Node& root);
  void read_serve(const YAML::Node& root);
  void check_summary_lengths();

  YamlReader r_;
  fs::path base_;
  PipelineConfig config_;
  bool plugin_failure_ = false;
  std::optional<std::string> known_stages_;  // computed at the first unknown stage
  std::vector<YAML::Node> plugin_nodes_;
  std::optional<YAML::Node> unit_node_;  // budget.unit, when it says tokens (budget.window: it counts tokens)
  std::optional<YAML::Node> window_auto_node_;  // budget.window, when it says auto
  SourceLocation archive_dir_at_;         // archive.dir, when written
  // checkers.enabled: each entry as read, and its nodes (for located errors).
  struct CheckerNodes {
    YAML::Node entry;
    std::optional<YAML::Node> plugin, params;
  };
  std::optional<YAML::Node> enabled_node_;
  SourceLocation checkers_at_;
  std::vector<CheckerEntryConfig> checker_entries_;
  std::vector<CheckerNodes> checker_nodes_;
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
  read_archive(*root);
  read_serve(*root);
  read_store(r_, *root, config_.store);
  result.errors = r_.errors();
  if (result.errors.empty())
    result.settings = ServeSettings{config_.serve.value_or(ServeConfig{}), config_.archive_dir, config_.store, config_.warnings};
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
  read_budget(root);
  read_sections(root);

  std::vector<YAML::Node> pipeline_params, reactive_params;
  resolve_checkers();
  read_summarizer(root);
  read_entries(root, "pipeline", true, config_.pipeline, pipeline_params);
  read_entries(root, "on_prompt_too_long", false, config_.on_prompt_too_long, reactive_params);

  for (std::size_t i = 0; i < config_.pipeline.size(); ++i)
    read_params(config_.pipeline[i], pipeline_params[i].IsDefined() ? &pipeline_params[i] : nullptr);
  for (std::size_t i = 0; i < config_.on_prompt_too_long.size(); ++i)
    read_params(config_.on_prompt_too_long[i], reactive_params[i].IsDefined() ? &reactive_params[i] : nullptr);
  read_prices(root);
  settle_window();
  read_serve(root);
  read_store(r_, root, config_.store);
  check_summary_lengths();

  result.errors = r_.errors();
  result.plugin_failure = plugin_failure_;
  if (result.errors.empty()) result.config = std::move(config_);
  return result;
}

void ConfigLoader::read_budget(const YAML::Node& root) {
  auto budget = r_.member(root, "", "budget", true);
  if (!budget || !r_.check_mapping(*budget, "budget", {"unit", "limit", "target", "window", "trigger"})) return;
  if ((*budget)["window"]) {
    read_window_budget(*budget);
    return;
  }
  if (const YAML::Node trigger = (*budget)["trigger"])
    r_.error(trigger, "budget.trigger", "a share of a window: give budget.window (auto or a number of tokens) with it, or budget.limit alone");
  if (auto unit = r_.member(*budget, "budget", "unit", false)) {
    if (auto u = r_.choice(*unit, "budget.unit", {"chars", "bytes", "tokens"})) {
      config_.budget.unit = *size_unit_from_string(*u);
      if (config_.budget.unit == SizeUnit::tokens) unit_node_ = *unit;
    }
  }
  std::optional<std::int64_t> limit, target;
  if (auto l = r_.member(*budget, "budget", "limit", true)) limit = r_.integer(*l, "budget.limit", 1);
  if (auto t = r_.member(*budget, "budget", "target", false)) {
    target = r_.integer(*t, "budget.target", 1);
    if (target && limit && *target > *limit) {
      r_.error(*t, "budget.target", "expected an integer from 1 to the limit " + std::to_string(*limit) + ", got \"" +
                                        std::to_string(*target) + "\"");
      target.reset();
    }
  }
  config_.budget.limit = static_cast<std::uint64_t>(limit.value_or(0));
  config_.budget.target = static_cast<std::uint64_t>(target.value_or(limit.value_or(0)));
}

// `budget: {window: auto | TOKENS, trigger: 0.8, target: 0.6}`: in tokens, trigger and target
// shares of the window. An auto window is the price table's for the request's model; the budget
// printed and validated is the default model's (settle_window).
void ConfigLoader::read_window_budget(const YAML::Node& budget) {
  WindowBudget w;
  const YAML::Node window = budget["window"];
  unit_node_ = window;  // a window counts tokens: the meter's absence is reported here
  config_.budget.unit = SizeUnit::tokens;
  const bool plain = window.IsScalar() && window.Tag() == "?";
  if (plain && window.Scalar() == "auto") {
    window_auto_node_ = window;
  } else if (plain && !window.Scalar().empty() && window.Scalar().find_first_not_of("0123456789") == std::string::npos) {
    auto n = r_.integer(window, "budget.window", 1000);
    if (!n) return;
    w.tokens = static_cast<std::uint64_t>(*n);
  } else {
    r_.error(window, "budget.window",
             "expected auto (the model's, from the price table) or a number of tokens (at least 1000), got " + YamlReader::describe(window));
    return;
  }
  if (const YAML::Node limit = budget["limit"])
    r_.error(limit, "budget.limit", "with budget.window the limit is budget.trigger, a share of the window; give one or the other");
  if (const YAML::Node unit = budget["unit"]; unit && !(unit.IsScalar() && unit.Scalar() == "tokens"))
    r_.error(unit, "budget.unit", "a window is counted in tokens: leave budget.unit out or say tokens, got " + YamlReader::describe(unit));
  if (const YAML::Node t = budget["trigger"])
    if (auto v = r_.param(t, "budget.trigger", ParamSpec::number("trigger", "", 0.8).at_least(0.01).at_most(1.0)))
      w.trigger = std::holds_alternative<double>(*v) ? std::get<double>(*v) : static_cast<double>(std::get<std::int64_t>(*v));
  if (const YAML::Node t = budget["target"])
    if (auto v = r_.param(t, "budget.target", ParamSpec::number("target", "", 0.6).at_least(0.01).at_most(w.trigger)))
      w.target = std::holds_alternative<double>(*v) ? std::get<double>(*v) : static_cast<double>(std::get<std::int64_t>(*v));
  if (w.target > w.trigger) w.target = w.trigger;  // reported above
  config_.window = w;
  if (w.tokens > 0) config_.budget = w.of(w.tokens);
}

// An auto window needs the price table, and the table a window for its default model: the budget
// a run uses when its input names no model, and what validate and print-pipeline show.
void ConfigLoader::settle_window() {
  if (!config_.window || config_.window->tokens > 0 || !window_auto_node_) return;
  if (!config_.prices) {
    r_.error(*window_auto_node_, "budget.window",
             "auto finds the window of the request's model in the price table: add `prices: prices.yaml` (configs/prices.yaml)");
    return;
  }
  auto w = config_.prices->window_of(config_.prices->default_model);
  if (!w) {
    r_.error(*window_auto_node_, "budget.window", config_.prices_file + ": the price table gives no context_window for its default model");
    return;
  }
  config_.budget = config_.window->of(w->tokens);
}

// `archive: {dir, restore_via}`.
void ConfigLoader::read_archive(const YAML::Node& root) {
  auto archive = r_.member(root, "", "archive", false);
  if (!archive || !r_.check_mapping(*archive, "archive", {"dir", "restore_via"})) return;
  if (auto d = r_.member(*archive, "archive", "dir", true))
    if (auto s = r_.string(*d, "archive.dir")) {
      config_.archive_dir = *s;
      archive_dir_at_ = r_.location(*d);
    }
  if (auto v = r_.member(*archive, "archive", "restore_via", false))
    if (auto s = r_.string(*v, "archive.restore_via")) {
      if (auto problem = restore_via_problem(*s)) r_.error(*v, "archive.restore_via", *problem);
      else config_.restore_via = *s;
    }
}

void ConfigLoader::read_serve(const YAML::Node& root) {
  auto serve = r_.member(root, "", "serve", false);
  if (!serve) return;
  ServeConfig s;
  read_serve_config(r_, *serve, base_.string(), s, config_.warnings);
  // An MCP client started from another folder resolves a relative archive from there.
  if (config_.restore_via == "mcp" && fs::path(config_.archive_dir).is_relative())
    warning(archive_dir_at_, "archive.dir",
            "\"" + config_.archive_dir + "\" is relative while archive.restore_via is mcp: `compactor mcp` started from another "
            "folder looks elsewhere; give an absolute folder");
  config_.serve = s;
}

void ConfigLoader::read_meter(const YAML::Node& root) {
  std::string kinds;
  for (auto k : meter_kinds()) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
  auto meter = r_.member(root, "", "meter", false);
  if (!meter) {
    if (unit_node_)
      r_.error(*unit_node_, config_.window ? "budget.window" : "budget.unit",
               "tokens need a meter: add `meter: {kind: …}` with one of " + kinds + (config_.window ? ", auto" : ""));
    return;
  }
  if (!r_.check_mapping(*meter, "meter", {"kind", "file", "family"})) return;
  MeterSpec spec;
  auto kind = r_.member(*meter, "meter", "kind", true);
  if (!kind) return;
  std::vector<std::string> choices;
  for (auto k : meter_kinds()) choices.emplace_back(k);
  choices.emplace_back("auto");  // the request's model's: o200k or calibrated (host/model_meters.hpp)
  auto k = r_.choice(*kind, "meter.kind", choices);
  if (!k) return;
  spec.kind = *k;
  const bool fitted = spec.kind == "calibrated" || spec.kind == "auto";
  std::optional<YAML::Node> file = r_.member(*meter, "meter", "file", fitted);
  if (file) {
    auto f = r_.string(*file, "meter.file");
    if (!f) return;
    spec.file = resolve(base_, *f);
  } else if (fitted) {
    return;  // member() has reported the missing file
  }
  if (spec.kind == "auto") {
    if (auto family = (*meter)["family"]) {
      r_.error(family, "meter.family", "an auto meter takes each model's family from the price table");
      return;
    }
    auto meters = make_model_meters({"o200k", "calibrated"}, spec.file);
    if (!meters) {
      r_.error(*file, "meter.file", meters.error().message);
      return;
    }
    config_.meter_spec = spec;
    config_.model_meters = std::make_shared<const ModelMeters>(std::move(*meters));
    return;
  }
  if (auto family = r_.member(*meter, "meter", "family", false)) {
    if (spec.kind != "calibrated") {
      r_.error(*family, "meter.family", "only a calibrated meter has model families");
      return;
    }
    auto f = r_.string(*family, "meter.family");
    if (!f) return;
    spec.family = *f;
  }
  auto loaded = make_meter(spec);
  if (!loaded) {
    r_.error(file ? *file : *kind, file ? "meter.file" : "meter.kind", loaded.error().message);
    return;
  }
  config_.meter_spec = spec;
  config_.meter = std::move(*loaded);
}

void ConfigLoader::read_sections(const YAML::Node& root) {
  read_meter(root);
  if (auto recent = r_.member(root, "", "recent", false); recent && r_.check_mapping(*recent, "recent", {"exchanges"})) {
    if (auto e = r_.member(*recent, "recent", "exchanges", true))
      if (auto n = r_.integer(*e, "recent.exchanges", 0, 1000)) config_.recent_exchanges = static_cast<std::size_t>(*n);
  }
  if (auto limits = r_.member(root, "", "limits", false); limits && r_.check_mapping(*limits, "limits", {"stage_timeout_ms"})) {
    if (auto t = r_.member(*limits, "limits", "stage_timeout_ms", false))
      if (auto n = r_.integer(*t, "limits.stage_timeout_ms", 1, 86400000)) config_.stage_timeout_ms = *n;
  }
  read_archive(root);

  if (auto c = r_.member(root, "", "checkers", false);
      c && r_.check_mapping(*c, "checkers", {"enabled", "replace_builtins", "on_violation"})) {
    checkers_at_ = r_.location(*c);
    if (auto enabled = r_.member(*c, "checkers", "enabled", false)) {
      if (!enabled->IsSequence()) {
        r_.error(*enabled, "checkers.enabled",
                 "expected a sequence of checkers (a name, or {checker, plugin, params}), got " + YamlReader::describe(*enabled));
      } else {
        enabled_node_ = *enabled;
        for (std::size_t i = 0; i < enabled->size(); ++i) read_checker_entry((*enabled)[i], "checkers.enabled[" + std::to_string(i) + "]");
      }
    }
    if (auto r = r_.member(*c, "checkers", "replace_builtins", false))
      if (auto v = r_.param(*r, "checkers.replace_builtins", ParamSpec::boolean("replace_builtins", "", false)))
        config_.replace_builtin_checkers = std::get<bool>(*v);
    if (auto p = r_.member(*c, "checkers", "on_violation", false))
      if (auto v = r_.choice(*p, "checkers.on_violation", {"abort", "skip"}))
        config_.on_violation = *v == "skip" ? ViolationPolicy::skip : ViolationPolicy::abort;
  }
  if (auto dirs = r_.member(root, "", "plugin_dirs", false)) {
    if (!dirs->IsSequence()) {
      r_.error(*dirs, "plugin_dirs", "expected a sequence of folders, got " + YamlReader::describe(*dirs));
    } else {
      for (std::size_t i = 0; i < dirs->size(); ++i) {
        std::string path = "plugin_dirs[" + std::to_string(i) + "]";
        if (auto d = r_.string((*dirs)[i], path)) {
          std::string resolved = resolve(base_, *d);
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

// One entry of checkers.enabled: a name, or {checker, plugin, params}. Plugin checkers are
// resolved once plugin_dirs is read (resolve_checkers).
void ConfigLoader::read_checker_entry(const YAML::Node& node, const std::string& path) {
  CheckerEntryConfig entry;
  entry.yaml_path = path;
  entry.location = r_.location(node);
  CheckerNodes nodes{node, std::nullopt, std::nullopt};
  if (node.IsMap()) {
    if (!r_.check_mapping(node, path, {"checker", "plugin", "params"})) return;
    auto name = r_.member(node, path, "checker", true);
    auto n = name ? r_.string(*name, join_path(path, "checker")) : std::nullopt;
    if (!n) return;
    entry.name = *n;
    nodes.plugin = r_.member(node, path, "plugin", false);
    if (nodes.plugin) {
      auto p = r_.string(*nodes.plugin, join_path(path, "plugin"));
      if (!p) return;
      entry.plugin = *p;
    }
    nodes.params = r_.member(node, path, "params", false);
  } else {
    auto n = r_.string(node, path);
    if (!n) return;
    entry.name = *n;
  }
  checker_entries_.push_back(std::move(entry));
  checker_nodes_.push_back(std::move(nodes));
}

// Each entry of checkers.enabled resolved (a built-in checker, one a loaded plugin registered,
// the file `plugin:` names, or compactor_checker_<name>.so on the search path) and its params
// validated; then the list that runs: the built-in checkers and these, or these alone.
void ConfigLoader::resolve_checkers() {
  PluginRegistry& registry = PluginRegistry::instance();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < checker_entries_.size(); ++i) {
    CheckerEntryConfig& entry = checker_entries_[i];
    const CheckerNodes& nodes = checker_nodes_[i];
    if (!seen.insert(entry.name).second) {
      r_.error(nodes.entry, entry.yaml_path, "checker \"" + entry.name + "\" is enabled twice");
      continue;
    }
    if (registry.builtin_checker(entry.name) != nullptr) {
      if (nodes.plugin || nodes.params)
        r_.error(nodes.plugin ? *nodes.plugin : *nodes.params, entry.yaml_path,
                 "\"" + entry.name + "\" is a built-in checker: it takes no plugin and no params");
      continue;
    }
    std::optional<std::string> file;
    if (!entry.plugin.empty()) {
      file = resolve(base_, entry.plugin);
      std::error_code ec;
      if (!fs::is_regular_file(*file, ec)) {
        r_.error(*nodes.plugin, join_path(entry.yaml_path, "plugin"), "no such plugin file: " + *file);
        continue;
      }
    } else if (registry.find_checker(entry.name) == nullptr) {
      file = find_provider("checker", entry.name, search_dirs());
    }
    const YAML::Node& at = nodes.plugin ? *nodes.plugin : nodes.entry;
    const std::string at_path = nodes.plugin ? join_path(entry.yaml_path, "plugin") : entry.yaml_path;
    if (file) {
      auto loaded = registry.load_for(*file, "checker", entry.name);
      if (!loaded) {
        r_.error(at, at_path, loaded.error().message);
        plugin_failure_ = true;
        continue;
      }
      entry.registered = registry.find_checker(entry.name);
      if (entry.registered == nullptr || entry.registered->plugin != *loaded) {
        entry.registered = nullptr;
        r_.error(at, at_path, *file + " does not register a checker \"" + entry.name + "\" (it provides: " +
                                  list((*loaded)->checkers) + ")");
        continue;
      }
    } else {
      entry.registered = registry.find_checker(entry.name);
    }
    if (entry.registered == nullptr) {
      std::vector<std::string> known;
      for (const BuiltinChecker& b : registry.builtin_checkers()) known.push_back(b.name());
      r_.error(nodes.entry, entry.yaml_path, "unknown checker \"" + entry.name + "\"; known checkers: " + list(known) +
                                                 ", or a plugin's " + checker_file_name(entry.name) +
                                                 " on the plugin search path (none found)");
      continue;
    }
    const std::string params_path = join_path(entry.yaml_path, "params");
    if (nodes.params && !nodes.params->IsNull() && !nodes.params->IsMap()) {
      r_.error(*nodes.params, params_path, "expected a mapping of parameters, got " + YamlReader::describe(*nodes.params));
      continue;
    }
    const bool given = nodes.params && nodes.params->IsMap();
    read_param_map(entry.registered->info->params, "checker " + entry.name, given ? &*nodes.params : nullptr, params_path, {},
                   given ? r_.location(*nodes.params) : entry.location, given ? params_path : entry.yaml_path, entry.params);
  }
  settle_checkers();
}

// The checkers that run: every built-in one and then the others listed, or, with
// replace_builtins, the list as it is, with a warning for each safety checker it leaves out. A
// list that names some built-in checkers but not all is warned about too: they all run, and it
// was probably meant to switch the others off.
void ConfigLoader::settle_checkers() {
  auto listed = [&](std::string_view name) {
    return std::any_of(checker_entries_.begin(), checker_entries_.end(), [&](const CheckerEntryConfig& e) { return e.name == name; });
  };
  const std::vector<BuiltinChecker>& builtins = PluginRegistry::instance().builtin_checkers();
  std::vector<std::string> left_out, safety;
  for (const BuiltinChecker& b : builtins)
    if (!listed(b.name())) {
      left_out.push_back(b.name());
      if (b.traits.safety) safety.push_back(b.name());
    }
  std::set<std::string> seen;
  if (config_.replace_builtin_checkers) {
    // The API's own rules run whatever the list says: they are among the checkers that run, so
    // print-pipeline shows them.
    for (const BuiltinChecker& b : builtins)
      if (b.traits.api_rule && !listed(b.name())) {
        CheckerEntryConfig rule;
        rule.name = b.name();
        seen.insert(rule.name);
        config_.checkers.push_back(std::move(rule));
      }
    for (const CheckerEntryConfig& e : checker_entries_)
      if (seen.insert(e.name).second) config_.checkers.push_back(e);
    if (!safety.empty())
      warning(enabled_node_ ? r_.location(*enabled_node_) : checkers_at_, "checkers.enabled",
              "replace_builtins leaves out the built-in safety checker" + std::string(safety.size() == 1 ? " " : "s ") +
                  list(safety) + ": a stage that breaks " + (safety.size() == 1 ? "its rule" : "their rules") + " is committed");
    return;
  }
  for (const BuiltinChecker& b : builtins) {
    CheckerEntryConfig builtin;
    builtin.name = b.name();
    seen.insert(builtin.name);
    config_.checkers.push_back(std::move(builtin));
  }
  bool names_builtin = false;
  for (const CheckerEntryConfig& e : checker_entries_) {
    names_builtin = names_builtin || PluginRegistry::instance().builtin_checker(e.name) != nullptr;
    if (seen.insert(e.name).second) config_.checkers.push_back(e);
  }
  if (names_builtin && !left_out.empty())
    warning(r_.location(*enabled_node_), "checkers.enabled",
            "names built-in checkers but not " + list(left_out) +
                ", which run all the same: enabled adds to the built-in checkers (replace_builtins: true runs only those listed)");
}

std::vector<std::string> ConfigLoader::search_dirs() const {
  std::vector<std::string> dirs = config_.plugin_dirs;
  dirs.push_back((base_ / "plugins").lexically_normal().string());
  for (const auto& d : env_plugin_dirs()) dirs.push_back(d);
  for (const auto& d : default_plugin_dirs()) dirs.push_back(d);
  return dirs;
}

// `summarizer: {kind, plugin}`: a built-in kind, one a loaded plugin registered, the file
// `plugin:` names, or compactor_summarizer_<kind>.so on the search path. Default: extractive.
void ConfigLoader::read_summarizer(const YAML::Node& root) {
  PluginRegistry& registry = PluginRegistry::instance();
  std::optional<YAML::Node> section, kind_node, plugin_node;
  if (auto s = r_.member(root, "", "summarizer", false)) {
    if (!s->IsMap()) {
      r_.error(*s, "summarizer", "expected a mapping (kind, plugin and the backend's params), got " + YamlReader::describe(*s));
      return;
    }
    section = *s;
    kind_node = r_.member(*s, "summarizer", "kind", true);
    plugin_node = r_.member(*s, "summarizer", "plugin", false);
    if (kind_node) {
      auto k = r_.string(*kind_node, "summarizer.kind");
      if (!k) return;
      config_.summarizer_kind = *k;
    }
  }
  std::optional<std::string> file;
  if (plugin_node) {
    auto p = r_.string(*plugin_node, "summarizer.plugin");
    if (!p) return;
    file = resolve(base_, *p);
    std::error_code ec;
    if (!fs::is_regular_file(*file, ec)) {
      r_.error(*plugin_node, "summarizer.plugin", "no such plugin file: " + *file);
      return;
    }
  } else if (registry.find_summarizer(config_.summarizer_kind) == nullptr) {
    file = find_provider("summarizer", config_.summarizer_kind, search_dirs());
  }
  if (file) {
    auto loaded = registry.load_for(*file, "summarizer", config_.summarizer_kind);
    if (!loaded) {
      r_.error(plugin_node ? r_.location(*plugin_node) : r_.location(*kind_node), plugin_node ? "summarizer.plugin" : "summarizer.kind",
               loaded.error().message);
      plugin_failure_ = true;
      return;
    }
  }
  config_.summarizer = registry.find_summarizer(config_.summarizer_kind);
  if (config_.summarizer == nullptr) {
    SourceLocation at = kind_node ? r_.location(*kind_node) : SourceLocation{config_.file, 1, 1};
    // Loaded kinds and the ones a plugin file on the search path is named for.
    std::set<std::string> known;
    for (const auto& n : registry.summarizer_names()) known.insert(n);
    const std::string prefix = "compactor_summarizer_";
    for (const auto& f : list_plugin_files(search_dirs(), prefix)) {
      std::string name = fs::path(f).filename().string();
      known.insert(name.substr(prefix.size(), name.size() - prefix.size() - 3));
    }
    r_.error(at, "summarizer.kind", "unknown summarizer \"" + config_.summarizer_kind + "\"; known summarizers: " +
                                        list(std::vector<std::string>(known.begin(), known.end())));
    return;
  }
  // The backend's params sit flat beside `kind` and `plugin`, validated against its schema.
  read_param_map(config_.summarizer->info->params, "summarizer " + config_.summarizer_kind, section ? &*section : nullptr,
                 "summarizer", {"kind", "plugin"}, section ? r_.location(*section) : SourceLocation{config_.file, 1, 1},
                 "summarizer", config_.summarizer_params);
}

// `prices: FILE`, resolved against the config's folder: what the run report prices a
// summarizer's model calls with.
void ConfigLoader::read_prices(const YAML::Node& root) {
  auto node = r_.member(root, "", "prices", false);
  if (!node) return;
  auto p = r_.string(*node, "prices");
  if (!p) return;
  config_.prices_file = resolve(base_, *p);
  auto table = read_price_table(config_.prices_file);
  if (!table) {
    r_.error(*node, "prices", table.error().message);
    return;
  }
  config_.prices = std::make_shared<const PriceTable>(std::move(table).value());
}

// A model told to write at most `max_chars` chars needs room for them: at least one output token
// per 4 chars (English prose runs at about 4 chars a token; code and other scripts at fewer).
void ConfigLoader::check_summary_lengths() {
  if (config_.summarizer == nullptr || !config_.summarizer_params.has("max_output_tokens")) return;
  const std::int64_t tokens = config_.summarizer_params.integer("max_output_tokens");
  if (tokens == 0) return;  // 0: derived from each stage's max_chars at every call
  for (const auto* list : {&config_.pipeline, &config_.on_prompt_too_long})
    for (const auto& e : *list)
      if (e.params.has("max_chars") && e.params.integer("max_chars") > tokens * 4)
        r_.error(e.location, join_path(e.yaml_path, "params.max_chars"),
                 fmt::format("{} chars cannot be written in summarizer.max_output_tokens {} (at least one token per 4 "
                             "chars: raise max_output_tokens to {} or leave it out)",
                             e.params.integer("max_chars"), tokens, (e.params.integer("max_chars") + 3) / 4));
}

const std::string& ConfigLoader::known_stages() {
  if (!known_stages_) {
    std::set<std::string> known;
    // Every stage a plugin file declares (several per file are found by any of their names).
    for (const auto& f : list_plugin_files(search_dirs(), "compactor_")) {
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

void ConfigLoader::read_when(const YAML::Node& node, const std::string& path, When& when) {
  const std::string expected = "expected always, over_budget or {messages_over: N}, got ";
  if (node.IsScalar() && (node.Scalar() == "always" || node.Scalar() == "over_budget") && node.Tag() == "?") {
    when.kind = node.Scalar() == "always" ? WhenKind::always : WhenKind::over_budget;
    return;
  }
  if (node.IsMap()) {
    if (!r_.check_mapping(node, path, {"messages_over"})) return;
    if (auto n = r_.member(node, path, "messages_over", true))
      if (auto v = r_.integer(*n, join_path(path, "messages_over"), 0)) {
        when.kind = WhenKind::messages_over;
        when.messages = static_cast<std::uint64_t>(*v);
      }
    return;
  }
  r_.error(node, path, expected + YamlReader::describe(node));
}

void ConfigLoader::read_entries(const YAML::Node& root, const std::string& key, bool required,
                                std::vector<PipelineEntryConfig>& out, std::vector<YAML::Node>& params_nodes) {
  auto list_node = r_.member(root, "", key, required);
  if (!list_node) return;
  if (!list_node->IsSequence()) {
    r_.error(*list_node, key, "expected a sequence of stages, got " + YamlReader::describe(*list_node));
    return;
  }
  for (std::size_t i = 0; i < list_node->size(); ++i) {
    YAML::Node node = (*list_node)[i];
    PipelineEntryConfig entry;
    entry.yaml_path = key + "[" + std::to_string(i) + "]";
    entry.location = r_.location(node);
    if (!r_.check_mapping(node, entry.yaml_path, kEntryKeys)) continue;
    std::optional<YAML::Node> plugin_node = r_.member(node, entry.yaml_path, "plugin", false);
    if (plugin_node)
      if (auto p = r_.string(*plugin_node, join_path(entry.yaml_path, "plugin"))) entry.plugin = *p;
    if (auto when = r_.member(node, entry.yaml_path, "when", false)) read_when(*when, join_path(entry.yaml_path, "when"), entry.when);
    YAML::Node params;
    if (auto p = r_.member(node, entry.yaml_path, "params", false)) params = *p;
    if (auto stage = r_.member(node, entry.yaml_path, "stage", true)) {
      if (auto s = r_.string(*stage, join_path(entry.yaml_path, "stage"))) {
        entry.stage = *s;
        std::size_t before = r_.errors().size();
        resolve_stage(entry, plugin_node);
        if (entry.registered == nullptr && r_.errors().size() == before) {
          // Every unknown stage is reported (loading goes on), each with the names that exist.
          r_.error(*stage, join_path(entry.yaml_path, "stage"),
                   "unknown stage \"" + entry.stage + "\"; known stages: " + known_stages());
        }
      }
    }
    out.push_back(std::move(entry));
    params_nodes.push_back(params);
  }
}

void ConfigLoader::resolve_stage(PipelineEntryConfig& entry, const std::optional<YAML::Node>& plugin_node) {
  PluginRegistry& registry = PluginRegistry::instance();
  std::string file;
  if (!entry.plugin.empty()) {
    file = resolve(base_, entry.plugin);
    std::error_code ec;
    std::string path = join_path(entry.yaml_path, "plugin");
    if (!fs::is_regular_file(file, ec)) {
      r_.error(*plugin_node, path, "no such plugin file: " + file);
      return;
    }
    auto loaded = registry.load_for(file, "stage", entry.stage);
    if (!loaded) {
      r_.error(*plugin_node, path, loaded.error().message);
      plugin_failure_ = true;
      return;
    }
    const RegisteredStage* found = registry.find_stage(entry.stage);
    if (found == nullptr || found->plugin != loaded.value()) {
      r_.error(*plugin_node, path, file + " does not provide stage \"" + entry.stage + "\" (it provides: " +
                                       list(loaded.value()->stages) + ")");
      return;
    }
    entry.registered = found;
    return;
  }
  if (auto found_file = find_provider("stage", entry.stage, search_dirs())) {
    auto loaded = registry.load_for(*found_file, "stage", entry.stage);
    if (!loaded) {
      r_.error(entry.location, join_path(entry.yaml_path, "stage"), loaded.error().message);
      plugin_failure_ = true;
      return;
    }
    entry.registered = registry.find_stage(entry.stage);
    if (entry.registered == nullptr)
      r_.error(entry.location, join_path(entry.yaml_path, "stage"),
               *found_file + " does not provide stage \"" + entry.stage + "\" (it provides: " + list(loaded.value()->stages) + ")");
    return;
  }
  // A stage registered in-process (tests, embedding hosts).
  const RegisteredStage* builtin = registry.find_stage(entry.stage);
  if (builtin != nullptr && builtin->plugin == nullptr) entry.registered = builtin;
}

void ConfigLoader::read_params(PipelineEntryConfig& entry, const YAML::Node* params) {
  if (entry.registered == nullptr) return;
  const StageInfo& info = *entry.registered->info;
  std::string path = join_path(entry.yaml_path, "params");
  if (params != nullptr && !params->IsNull() && !params->IsMap()) {
    r_.error(*params, path, "expected a mapping of parameters, got " + YamlReader::describe(*params));
    return;
  }
  const bool given = params != nullptr && params->IsMap();
  read_param_map(info.params, info.name, given ? params : nullptr, path, {}, given ? r_.location(*params) : entry.location,
                 given ? path : entry.yaml_path, entry.params);
}

// The keys of `map` (except the host's own `host_keys`) validated against `schema`, defaults
// filled in; a missing required one is reported at `missing_at`.
void ConfigLoader::read_param_map(const ParamSchema& schema, const std::string& owner, const YAML::Node* map,
                                  const std::string& path, const std::set<std::string>& host_keys,
                                  const SourceLocation& missing_at, const std::string& missing_path, ParamValues& out) {
  std::vector<std::string> names(host_keys.begin(), host_keys.end());
  for (const auto& p : schema) names.push_back(p.name);
  std::set<std::string> seen;  // given, valid or not: an invalid value is not also "missing"
  if (map != nullptr) {
    for (auto it = map->begin(); it != map->end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      std::string key_path = join_path(path, key);
      if (!seen.insert(key).second) {
        r_.error(it->first, key_path, "duplicate key");
        continue;
      }
      if (host_keys.count(key)) continue;
      const ParamSpec* spec = nullptr;
      for (const auto& p : schema)
        if (p.name == key) spec = &p;
      if (spec == nullptr) {
        r_.error(it->first, key_path,
                 host_keys.empty() ? "unknown parameter; " + owner + " takes: " + (names.empty() ? "none" : list(names))
                                   : "unknown key; expected one of: " + list(names));
        continue;
      }
      if (auto v = r_.param(it->second, key_path, *spec)) out.set(key, *v);
    }
  }
  for (const auto& spec : schema) {
    if (out.has(spec.name) || seen.count(spec.name)) continue;
    if (spec.default_value) {
      out.set(spec.name, *spec.default_value);
    } else if (spec.is_required()) {
      r_.error(missing_at, missing_path, "missing required parameter \"" + spec.name + "\" (" + spec.expectation() + ")");
    }
  }
}

// YAML double-quoted string (JSON escaping is valid YAML).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", c);
        else out += c;
    }
  }
  return out + "\"";
}

std::string yaml_value(const ParamValue& v) {
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&v)) {
    std::string s = fmt::format("{}", *d);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return quoted(std::get<std::string>(v));
}

void print_params(std::string& out, const std::string& indent, const ParamValues& params) {
  if (params.all().empty()) {
    out += indent + "params: {}\n";
    return;
  }
  out += indent + "params:\n";
  for (const auto& [name, value] : params.all()) out += indent + "  " + name + ": " + yaml_value(value) + "\n";
}

void print_entries(std::string& out, const std::string& key, const std::vector<PipelineEntryConfig>& entries) {
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

// `checkers:` as the run has them: built-in names in a flow list when that is all there is, else
// one entry a line, a plugin checker with its file and params.
void print_checkers(std::string& out, const PipelineConfig& c) {
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
          if (d.IsScalar()) paths.dirs.push_back(resolve(base, d.Scalar()));
      for (const char* list : {"pipeline", "on_prompt_too_long"})
        if (root[list] && root[list].IsSequence())
          for (const auto& entry : root[list])
            if (entry.IsMap() && entry["plugin"] && entry["plugin"].IsScalar()) paths.files.push_back(resolve(base, entry["plugin"].Scalar()));
      if (root["summarizer"] && root["summarizer"].IsMap() && root["summarizer"]["plugin"] && root["summarizer"]["plugin"].IsScalar())
        paths.files.push_back(resolve(base, root["summarizer"]["plugin"].Scalar()));
      if (const YAML::Node checkers = root["checkers"]; checkers.IsMap() && checkers["enabled"] && checkers["enabled"].IsSequence())
        for (const auto& entry : checkers["enabled"])
          if (entry.IsMap() && entry["plugin"] && entry["plugin"].IsScalar()) paths.files.push_back(resolve(base, entry["plugin"].Scalar()));
    }
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                 ": YAML syntax error: " + e.msg};
  }
  paths.dirs.push_back((base / "plugins").lexically_normal().string());
  for (const auto& d : env_plugin_dirs()) paths.dirs.push_back(d);
  return paths;
}

Expected<std::string> config_archive_dir(const std::string& file) {
  auto text = read_input_bytes(file);
  if (!text) return text.error();
  YamlReader r(file);
  std::string dir = PipelineConfig{}.archive_dir;
  try {
    YAML::Node root = YAML::Load(*text);
    if (!root.IsMap()) return Error{file + ":1:1: expected a mapping with version: 1, got " + YamlReader::describe(root)};
    if (auto archive = r.member(root, "", "archive", false); archive && r.check_mapping(*archive, "archive", {"dir", "restore_via"}))
      if (auto d = r.member(*archive, "archive", "dir", true))
        if (auto s = r.string(*d, "archive.dir")) dir = *s;
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                 ": YAML syntax error: " + e.msg};
  }
  if (!r.errors().empty()) return Error{r.errors().front()};
  return dir;
}

Expected<StoreSettings> config_store_settings(const std::string& file) {
  auto dir = config_archive_dir(file);
  if (!dir) return dir.error();
  auto text = read_input_bytes(file);
  if (!text) return text.error();
  StoreSettings out{*dir, {}};
  YamlReader r(file);
  try {
    read_store(r, YAML::Load(*text), out.store);
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg};
  }
  if (!r.errors().empty()) return Error{r.errors().front()};
  return out;
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

std::optional<std::string> restore_via_problem(std::string_view value) {
  if (value == "cli" || value == "mcp") return std::nullopt;
  const std::string got = "got \"" + std::string(value) + "\"";
  if (value.find("{receipt}") == std::string_view::npos)
    return "expected cli, mcp, or a phrase holding {receipt} (how the model restores a receipt), " + got;
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20) return "expected a phrase on one line, without control characters";
  if (count_code_points(value) > kMaxRestorePhraseChars)
    return "expected a phrase of at most " + std::to_string(kMaxRestorePhraseChars) + " chars, got " +
           std::to_string(count_code_points(value));
  return std::nullopt;
}

std::string restore_phrase(const PipelineConfig& c, const std::string& tenant) {
  if (c.restore_via == "mcp") return "the `restore` tool of the `compactor` MCP server with the receipt {receipt}";
  if (c.restore_via != "cli") return c.restore_via;
  const bool redis = c.store.kind == StoreConfig::Kind::redis;
  // A tenant's receipts are found in its namespace only (its id is a name, not a secret).
  const std::string in_tenant = tenant.empty() ? "" : " --tenant " + tenant;
  if (!redis && c.archive_dir == PipelineConfig{}.archive_dir) return "`compactor restore {receipt}" + in_tenant + "`";
  // Quoted for a shell when it holds anything but a path's usual characters. A Redis store is
  // reached through the config that names it, from any folder.
  std::error_code ec;
  std::string dir = redis ? fs::absolute(c.file, ec).lexically_normal().string() : c.archive_dir;
  if (dir.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+@%=:,") != std::string::npos) {
    std::string quoted_dir = "'";
    for (char ch : dir) quoted_dir += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    dir = quoted_dir + "'";
  }
  return "`compactor restore {receipt} " + std::string(redis ? "--config " : "--archive ") + dir + in_tenant + "`";
}

// Paths the config resolved against its own folder, printed absolute: the printed pipeline is read
// again from wherever it is saved, and from any working folder.
static std::string absolute_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::string print_pipeline(const PipelineConfig& c) {
  std::string out = "# The resolved pipeline (compactor print-pipeline); feeding it back yields the same pipeline.\n";
  out += "version: 1\n";
  if (c.window) {
    out += "budget:\n  window: " + (c.window->tokens > 0 ? std::to_string(c.window->tokens) : std::string("auto")) +
           "  # " + std::to_string(c.budget.limit) + " / " + std::to_string(c.budget.target) + " tokens" +
           (c.window->tokens > 0 ? std::string() : " at the default model's window") + "\n  trigger: " +
           yaml_value(ParamValue(c.window->trigger)) + "\n  target: " + yaml_value(ParamValue(c.window->target)) + "\n";
  } else {
    out += "budget:\n  unit: " + std::string(to_string(c.budget.unit)) + "\n  limit: " + std::to_string(c.budget.limit) +
           "\n  target: " + std::to_string(c.budget.target) + "\n";
  }
  if (c.meter_spec) {
    out += "meter:\n  kind: " + quoted(c.meter_spec->kind) + "\n";
    if (!c.meter_spec->file.empty()) out += "  file: " + quoted(absolute_path(c.meter_spec->file)) + "\n";
    if (!c.meter_spec->family.empty()) out += "  family: " + quoted(c.meter_spec->family) + "\n";
  }
  out += "recent:\n  exchanges: " + std::to_string(c.recent_exchanges) + "\n";
  out += "archive:\n  dir: " + quoted(c.archive_dir) + "\n";
  if (c.restore_via != "cli") out += "  restore_via: " + quoted(c.restore_via) + "\n";  // cli, the default, goes unsaid
  if (c.store.kind == StoreConfig::Kind::redis) {  // the folder store, the default, goes unsaid
    const StoreConfig& st = c.store;
    out += "store:\n  kind: redis\n  url: " + quoted(st.url) + "\n";
    if (!st.username.empty()) out += "  username: " + quoted(st.username) + "\n";
    if (!st.password_env.empty()) out += "  password_env: " + quoted(st.password_env) + "\n";
    out += "  prefix: " + quoted(st.prefix) + "\n  timeout_ms: " + std::to_string(st.timeout_ms) +
           "\n  state_ttl_s: " + std::to_string(st.state_ttl_s) + "\n  superseded_ttl_s: " + std::to_string(st.superseded_ttl_s) + "\n";
  }
  out += "limits:\n  stage_timeout_ms: " + std::to_string(c.stage_timeout_ms) + "\n";
  out += "summarizer:\n  kind: " + quoted(c.summarizer_kind) + "\n";
  if (c.summarizer != nullptr && c.summarizer->plugin != nullptr)
    out += "  plugin: " + quoted(c.summarizer->plugin->file) + "  # plugin " + c.summarizer->plugin->name + " " +
           c.summarizer->plugin->version + "\n";
  // Params are names and numbers; a key is only ever named by its environment variable.
  for (const auto& [name, value] : c.summarizer_params.all()) out += "  " + name + ": " + yaml_value(value) + "\n";
  if (!c.prices_file.empty()) out += "prices: " + quoted(absolute_path(c.prices_file)) + "\n";
  print_checkers(out, c);
  out += "  on_violation: " + std::string(c.on_violation == ViolationPolicy::skip ? "skip" : "abort") + "\n";
  if (c.plugin_dirs.empty()) {
    out += "plugin_dirs: []\n";
  } else {
    out += "plugin_dirs:\n";
    for (const auto& d : c.plugin_dirs) out += "  - " + quoted(absolute_path(d)) + "\n";
  }
  print_entries(out, "pipeline", c.pipeline);
  print_entries(out, "on_prompt_too_long", c.on_prompt_too_long);
  if (c.serve) print_serve_config(out, *c.serve);
  return out;
}

}  // namespace compactor
