#include "bench/frontier.hpp"

#include <algorithm>
#include <map>

namespace compactor::bench {

std::vector<FrontierPoint> frontier_points(const BenchResults& results, const std::function<bool(const SessionReplay&)>& keep) {
  std::map<std::string, const SessionReplay*> baseline;
  for (const auto& r : results.replays)
    if (results.is_baseline(r)) baseline[r.session] = &r;
  std::vector<FrontierPoint> points(results.configs.size() + 1);
  std::vector<std::uint64_t> visible(points.size(), 0);
  for (const auto& r : results.replays) {
    auto b = baseline.find(r.session);
    if (r.config_index >= points.size() || b == baseline.end() || (keep && !keep(r))) continue;
    FrontierPoint& p = points[r.config_index];
    ++p.sessions;
    p.probes += r.evidence.probes;
    visible[r.config_index] += r.evidence.visible;
    p.cost_nusd += r.cost_with_refetch_nusd();
    p.baseline_nusd += b->second->cost_with_refetch_nusd();
  }
  std::vector<FrontierPoint> out;
  for (std::size_t k = 0; k < points.size(); ++k) {
    FrontierPoint& p = points[k];
    if (p.sessions == 0) continue;
    p.config_index = k;
    p.name = results.config_name(k);
    p.path = results.config_path(k);
    p.cost = p.baseline_nusd == 0 ? 1.0 : static_cast<double>(p.cost_nusd) / static_cast<double>(p.baseline_nusd);
    p.evidence = p.probes == 0 ? 100.0 : 100.0 * static_cast<double>(visible[k]) / static_cast<double>(p.probes);
    out.push_back(std::move(p));
  }
  return out;
}

// Costs compare in nano-USD (exact); evidence as the same shares of the same probes.
bool dominates(const FrontierPoint& a, const FrontierPoint& b) {
  const bool cheaper_or_equal = a.cost_nusd <= b.cost_nusd, more_or_equal = a.evidence >= b.evidence;
  return cheaper_or_equal && more_or_equal && (a.cost_nusd < b.cost_nusd || a.evidence > b.evidence);
}

std::vector<std::size_t> frontier(const std::vector<FrontierPoint>& points) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (std::none_of(points.begin(), points.end(), [&](const FrontierPoint& o) { return dominates(o, points[i]); })) out.push_back(i);
  std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return points[a].cost_nusd < points[b].cost_nusd; });
  return out;
}

}  // namespace compactor::bench
