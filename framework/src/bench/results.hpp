// What a bench run measured: the configs it ran, one replay per session × config, and the
// sessions it skipped. One run and a merge of shards give the same results.
#pragma once

#include "bench/replay.hpp"

#include <string>
#include <vector>

namespace compactor::bench {

struct BenchConfig {
  std::string path;      // as given on the command line (a sweep's point: its settings)
  std::string pipeline;  // its print-pipeline text
  std::string name;      // what tables, legends and the report call it (config_names)
};

// The names configs go by when none is given (`--config NAME=PATH`): each file's stem
// ("configs/peers/codex-auto-compact.yaml" is codex-auto-compact), its folder too when two stems
// are alike, the path itself when that is still not unique; a sweep's point by its number
// ("default-budgets #7"). `given` holds a name or "" per path.
std::vector<std::string> config_names(const std::vector<std::string>& paths, const std::vector<std::string>& given = {});

struct Skipped {
  std::string session;
  std::string reason;
};

struct BenchResults {
  std::vector<BenchConfig> configs;
  // Sorted by (session, config_index); each session's last is the uncompacted baseline, whose
  // config_index is configs.size().
  std::vector<SessionReplay> replays;
  std::vector<Skipped> skipped;        // sorted by session
  std::string chart_session;           // empty: the session with the most calls
  // A sweep's: the frontier is drawn again over the sessions whose uncompacted history passes
  // this many tokens (0: not a sweep, no frontier section).
  std::uint64_t sweep_long_sessions = 0;

  void sort();
  bool is_baseline(const SessionReplay& r) const { return r.config_index == configs.size(); }
  // The config's short name, or kUncompacted for the baseline.
  std::string config_name(std::uint64_t index) const;
  // The config's path as given, or kUncompacted for the baseline.
  std::string config_path(std::uint64_t index) const;
};

// A session a config replayed dearer than the uncompacted baseline did, each cost with the calls
// that fetch missed evidence again.
struct Dearer {
  std::string session, config;
  std::uint64_t cost_nusd = 0, baseline_nusd = 0;
  std::uint64_t refetch_nusd = 0;  // the config's re-fetch charge, in cost_nusd
  bool baseline_fits = true;  // the uncompacted replay had no call over the window
};
std::vector<Dearer> dearer_sessions(const BenchResults& results);

// One line per session whose replays were priced with different meters (their costs do not
// compare), or, when the rows of the table count with different meters, one line saying so.
std::vector<std::string> meter_warnings(const BenchResults& results);

// One line per thing worth a reader's attention, in the results' order: each skipped session,
// each replay's errors, each probe lost ("S (C): call N: lost probe \"…\""), the meter warnings.
std::vector<std::string> notices(const BenchResults& results);

// No call failed the checkers or had a candidate rejected, and no probe was lost.
bool passed(const BenchResults& results);

}  // namespace compactor::bench
