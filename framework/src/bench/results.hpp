// What a bench run measured: the configs it ran, one replay per session × config, and the
// sessions it skipped. One run and a merge of shards give the same results.
#pragma once

#include "bench/replay.hpp"

#include <string>
#include <vector>

namespace compactor::bench {

struct BenchConfig {
  std::string path;      // as given on the command line
  std::string pipeline;  // its print-pipeline text
};

struct Skipped {
  std::string session;
  std::string reason;
};

struct BenchResults {
  std::vector<BenchConfig> configs;
  std::vector<SessionReplay> replays;  // sorted by (session, config_index)
  std::vector<Skipped> skipped;        // sorted by session
  std::string chart_session;           // empty: the session with the most calls

  void sort();
};

// One line per thing worth a reader's attention, in the results' order: each skipped session,
// each replay's errors, each probe lost ("S (C): call N: lost probe \"…\"").
std::vector<std::string> notices(const BenchResults& results);

// No call failed the checkers or had a candidate rejected, and no probe was lost.
bool passed(const BenchResults& results);

}  // namespace compactor::bench
