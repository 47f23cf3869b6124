#include "bench/sweep_report.hpp"

#include "bench/charts.hpp"
#include "bench/frontier.hpp"
#include "bench/palette.hpp"
#include "bench/verdict.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace compactor::bench {

namespace {

using Keep = std::function<bool(const SessionReplay&)>;

Keep keep_long(const BenchResults& results) {
  const std::vector<std::string> names = long_sessions(results, results.sweep_long_sessions);
  auto set = std::make_shared<std::set<std::string>>(names.begin(), names.end());
  return [set](const SessionReplay& r) { return set->count(r.session) > 0; };
}

std::vector<std::string> point_colors(const std::vector<FrontierPoint>& points, std::size_t configs) {
  std::vector<std::string> colors;
  for (const auto& p : points)
    colors.push_back(config_color(p.config_index, configs));
  return colors;
}

}  // namespace

std::vector<std::string> long_sessions(const BenchResults& results, std::uint64_t tokens) {
  std::vector<std::string> out;
  for (const auto& r : results.replays) {
    if (!results.is_baseline(r)) continue;
    std::uint64_t largest = 0;
    for (const auto& c : r.calls) largest = std::max(largest, c.sent);
    if (largest > tokens) out.push_back(r.session);
  }
  return out;
}

std::string sweep_report(const BenchResults& results) {
  if (results.sweep_long_sessions == 0) return "";
  const std::vector<FrontierPoint> all = frontier_points(results);
  std::size_t sessions = 0;
  for (const auto& r : results.replays) sessions += results.is_baseline(r);
  std::string out = fmt::format(
      "\nSweep: cost with re-fetch against uncompacted's on the same sessions, and the evidence the agent used still visible; "
      "a config is dominated when another costs no more and keeps no less, one of them strictly.\n\nOver all {} sessions:\n\n{}",
      sessions, frontier_table(all, true, false));
  const std::vector<std::string> names = long_sessions(results, results.sweep_long_sessions);
  if (names.empty()) return out + fmt::format("\nNo session's uncompacted history passes {} tokens.\n", results.sweep_long_sessions);
  const std::vector<FrontierPoint> longer = frontier_points(results, keep_long(results));
  out += fmt::format("\nOver the {} sessions whose uncompacted history passes {} tokens:\n\n{}", names.size(), results.sweep_long_sessions,
                     frontier_table(longer, true, true));
  std::string meeting;
  for (const auto& p : longer)
    if (p.cost <= kAcceptedCost && p.evidence >= kAcceptedEvidence && p.config_index < results.configs.size())
      meeting += (meeting.empty() ? "" : "; ") + p.path;
  return out + fmt::format("\nCost ≤ {:g}x with evidence ≥ {:g}% on those sessions: {}\n", kAcceptedCost, kAcceptedEvidence,
                           meeting.empty() ? std::string("none") : meeting);
}

std::vector<std::pair<std::string, std::string>> sweep_charts(const BenchResults& results) {
  std::vector<std::pair<std::string, std::string>> out;
  if (results.sweep_long_sessions == 0) return out;
  const std::vector<FrontierPoint> all = frontier_points(results);
  out.emplace_back("frontier.svg", frontier_chart("The sweep's frontier, every session", all, point_colors(all, results.configs.size()), false));
  if (long_sessions(results, results.sweep_long_sessions).empty()) return out;
  const std::vector<FrontierPoint> longer = frontier_points(results, keep_long(results));
  out.emplace_back("frontier-long.svg",
                   frontier_chart(fmt::format("The sweep's frontier, sessions past {} tokens", results.sweep_long_sessions), longer,
                                  point_colors(longer, results.configs.size()), false));
  return out;
}

}  // namespace compactor::bench
