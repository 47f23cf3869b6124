// Cost against evidence, one point per config: what a reader picks a pipeline from. A config
// dominates another when it costs no more (with the re-fetch charge) and keeps no less of the
// evidence the agent used, one of the two strictly; the frontier is the configs none dominates.
#pragma once

#include "bench/results.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace compactor::bench {

struct FrontierPoint {
  std::uint64_t config_index = 0;  // the baseline's is the number of configs
  std::string name;  // the config's short name
  std::string path;  // as given (a sweep's point: its settings)
  double cost = 0;      // cost with re-fetch against uncompacted's on the same sessions (1: the same)
  double evidence = 100;  // evidence visible, %
  std::uint64_t sessions = 0, probes = 0;
  std::uint64_t cost_nusd = 0, baseline_nusd = 0;  // with re-fetch
};

// One point per config and the baseline (last), over the replays `keep` accepts (all when empty);
// a config with no replay kept is left out.
std::vector<FrontierPoint> frontier_points(const BenchResults& results,
                                           const std::function<bool(const SessionReplay&)>& keep = {});

bool dominates(const FrontierPoint& a, const FrontierPoint& b);

// The indexes of the points no other point dominates, cheapest first.
std::vector<std::size_t> frontier(const std::vector<FrontierPoint>& points);

}  // namespace compactor::bench
