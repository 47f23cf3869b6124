// The pipeline configuration an operator writes (YAML, `version: 1`), validated in full before
// anything runs. Loading resolves every stage to a plugin (loading it), validates every stage's
// params against the schema the stage declared, and reports every mistake it finds, each as one
// line: `file:line:col: yaml.path: expected …, got …`.
#pragma once

#include "archive/store_config.hpp"
#include "host/model_meters.hpp"
#include "meter/meter_kinds.hpp"
#include "compactor/param_schema.hpp"
#include "loader/plugin_loader.hpp"
#include "pricing/price_table.hpp"
#include "compactor/stage.hpp"
#include "host/serve_config.hpp"
#include "host/source_location.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compactor {


enum class WhenKind { always, over_budget, messages_over };
struct When {
  WhenKind kind = WhenKind::always;
  std::uint64_t messages = 0;  // messages_over
  std::string to_string() const;  // "always", "over_budget", "{messages_over: 50}"
};

struct PipelineEntryConfig {
  std::string stage;
  std::string plugin;       // as written in the config (may be empty)
  When when;
  ParamValues params;       // validated, defaults filled in
  const RegisteredStage* registered = nullptr;
  SourceLocation location;  // of the entry
  std::string yaml_path;    // "pipeline[2]"
};

// A checker that runs after every stage: a built-in one, or one a plugin registers (found by
// `plugin:` or on the plugin search path), with its validated params.
struct CheckerEntryConfig {
  std::string name;
  std::string plugin;                             // as written (may be empty)
  ParamValues params;                             // validated, defaults filled in
  const RegisteredChecker* registered = nullptr;  // null for a built-in checker
  SourceLocation location;                        // of the entry (none for a built-in not listed)
  std::string yaml_path;                          // "checkers.enabled[2]"
};

enum class ViolationPolicy { abort, skip };

// `budget: {window, trigger, target}`: the budget as shares of a context window, in tokens. The
// window is the request's model's, from the price table (`window: auto`), or a number of tokens.
struct WindowBudget {
  std::uint64_t tokens = 0;  // 0: auto
  double trigger = 0.8;      // crossing this share of the window starts a compaction…
  double target = 0.6;       // … which brings the history down to this share, in one step
  Budget of(std::uint64_t window) const;
};

struct PipelineConfig {
  std::string file;          // as given
  // What `when: over_budget` measures. With `window`, the budget of the window it gives, or of the
  // price table's default model when the window is auto (a run finds its model's: host/model_budget.hpp).
  Budget budget;
  std::optional<WindowBudget> window;
  std::size_t recent_exchanges = 1;
  std::string archive_dir = ".compactor/archive";
  // `archive.restore_via`: how the model gets archived bytes back, for the instruction a history
  // carries once (restore_phrase gives the text): cli, mcp, or a phrase holding {receipt}.
  std::string restore_via = "cli";
  // `limits.stage_timeout_ms`: a stage still running after this long is stopped (`compactor run`
  // runs the pipeline in a child process). Longer than a model summarizer's retries by default.
  std::int64_t stage_timeout_ms = 600000;
  std::optional<MeterSpec> meter_spec;   // as written (file resolved against the config's folder)
  std::shared_ptr<const Meter> meter;      // loaded; set when meter_spec is, unless its kind is auto
  std::shared_ptr<const ModelMeters> model_meters;  // `meter: {kind: auto}`: o200k and the fit's families
  std::string summarizer_kind = "extractive";
  const RegisteredSummarizer* summarizer = nullptr;  // resolved
  ParamValues summarizer_params;                     // validated, defaults filled in
  // `summarizer.mode`: under serve, a model summarizer's summary is written in the background (the
  // call that needs it gets the extractive one as its stand-in) or inline (the call waits).
  // `compactor run` and the bench write it inline whatever it says. Background by default for
  // every summarizer but the extractive one, which is never slow.
  enum class SummarizerMode { background, inline_call } summarizer_mode = SummarizerMode::background;
  bool summarizer_mode_written = false;  // the config says it (run and bench then say they write inline)
  // `summarizer.background_timeout_s`: how long a background summary may take (its lease lasts as
  // long); `background_attempts`: how many times one summary is tried before it is given up.
  std::int64_t background_timeout_s = 300;
  std::int64_t background_attempts = 3;
  bool background_summaries() const { return summarizer_mode == SummarizerMode::background && summarizer_kind != "extractive"; }
  std::string prices_file;                           // `prices:`, resolved; empty when not given
  std::shared_ptr<const PriceTable> prices;          // loaded from it
  // The checkers that run, in run order: every built-in one, then those `checkers.enabled` adds;
  // with `checkers.replace_builtins: true`, only those it lists.
  std::vector<CheckerEntryConfig> checkers;
  bool replace_builtin_checkers = false;
  ViolationPolicy on_violation = ViolationPolicy::abort;
  std::vector<std::string> plugin_dirs;  // resolved against the config's folder
  std::vector<PipelineEntryConfig> pipeline;
  std::vector<PipelineEntryConfig> on_prompt_too_long;
  std::optional<ServeConfig> serve;  // when the config has a `serve:` section
  StoreConfig store;                 // `store:`: where state and blobs live (archive.dir by default)
  // What loads but is probably not meant (a safety checker left out), one located line each:
  // said when a pipeline is built from it (run, serve, validate).
  std::vector<std::string> warnings;
};

struct ConfigLoadResult {
  std::optional<PipelineConfig> config;  // set when there were no errors
  std::vector<std::string> errors;       // every problem found, one line each
  bool plugin_failure = false;           // a plugin was refused or failed: exit 3, not 2
};

// Reads, validates and resolves a config file. Plugins are searched in the entry's
// `plugin:` path, `plugin_dirs`, `plugins/` beside the config, each folder of the environment
// variable COMPACTOR_PLUGIN_PATH (colon-separated), then the binary's own plugin folder.
ConfigLoadResult load_pipeline_config(const std::string& file);

// What `compactor serve` itself reads of a config, without loading a plugin (its workers load
// and validate the rest): the `serve:` section and `archive.dir`. Errors are located lines.
struct ServeSettings {
  ServeConfig serve;
  std::string archive_dir = ".compactor/archive";
  StoreConfig store;
  std::vector<std::string> warnings;  // as PipelineConfig::warnings
  // The budget, meter and price table as a run resolves them (host/model_budget.hpp), no stage.
  std::shared_ptr<const PipelineConfig> budgeting;
};
struct ServeSettingsLoadResult {
  std::optional<ServeSettings> settings;  // set when there were no errors
  std::vector<std::string> errors;
};
ServeSettingsLoadResult load_serve_settings(const std::string& file);

// What a config file says about plugins, read without validating the rest (for `plugins`): its
// search folders, and the files its entries (and its summarizer) name by path with `plugin:`.
struct ConfigPluginPaths {
  std::vector<std::string> dirs;
  std::vector<std::string> files;
};
Expected<ConfigPluginPaths> config_plugin_paths(const std::string& file);

// What a config file says its archive folder is: `archive.dir` as written (the default when the
// config has none), read without validating the rest or loading any plugin (for `mcp`, which
// only reads the archive). An error is one line, `file:line:col: archive.dir: expected …`.
Expected<std::string> config_archive_dir(const std::string& file);

// What `restore`, `mcp` and `archive gc` read of a config: `archive.dir` and `store:`, validated
// as the loader does, without loading any plugin. The first error, one located line.
struct StoreSettings {
  std::string archive_dir = ".compactor/archive";
  StoreConfig store;
};
Expected<StoreSettings> config_store_settings(const std::string& file);

// Params given as values (not YAML) checked as the config loader checks a section: no name the
// schema does not declare, every value one its spec accepts, every required one given; defaults
// filled in. The first problem is the error: "OWNER: params.NAME: expected …, got …".
Expected<ParamValues> validated_params(const ParamSchema& schema, const ParamValues& given, const std::string& owner);

// Why `value` cannot be `archive.restore_via` (cli, mcp, or one line of at most
// kMaxRestorePhraseChars chars holding {receipt}), or nothing when it can.
inline constexpr std::size_t kMaxRestorePhraseChars = 300;
std::optional<std::string> restore_via_problem(std::string_view value);
// The instruction's phrase for a config, `{receipt}` where the receipt goes: cli names
// `compactor restore` (with `--archive DIR` unless the archive is the default folder, and
// `--tenant T` for a tenant's run), mcp the `restore` tool of the `compactor` MCP server (which
// serves its caller's tenant), a template itself.
std::string restore_phrase(const PipelineConfig& config, const std::string& tenant = "");

// The normalized, resolved pipeline as YAML; fed back to load_pipeline_config it yields the same
// pipeline, whatever folder the printed file is in and whatever the working folder: every plugin
// (stage, summarizer, checker) is its file, and plugin_dirs, the meter's file and the price table
// are absolute (archive.dir stays as written: it is the working folder's). Plugin versions are
// given in comments.
std::string print_pipeline(const PipelineConfig& config);

}  // namespace compactor
