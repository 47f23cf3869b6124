#include "bench/sweep_report.hpp"

#include "bench/charts.hpp"
#include "bench/frontier.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace compactor::bench {

namespace {

const char* const kPointColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

using Keep = std::function<bool(const SessionReplay&)>;

Keep keep_long(const BenchResults& results) {
  const std::vector<std::string> names = long_sessions(results, results.sweep_long_sessions);
  auto set = std::make_shared<std::set<std::string>>(names.begin(), names.end());
  return [set](const SessionReplay& r) { return set->count(r.session) > 0; };
}

// A sweep's point by its number ("default-budgets #5"), any other config by its path.
std::string short_name(const std::string& name) {
  const std::size_t hash = name.find(" #");
  return hash == std::string::npos ? name : name.substr(0, name.find(':', hash));
}

bool accepted(const FrontierPoint& p) { return p.cost <= kAcceptedCost && p.evidence >= kAcceptedEvidence; }

// "configs/default.yaml, sweep #3: … and 4 more": the points that dominate `p`, frontier first.
std::string dominated_by(const std::vector<FrontierPoint>& points, const std::vector<std::size_t>& front, std::size_t p) {
  std::vector<std::string> names;
  for (std::size_t f : front)
    if (dominates(points[f], points[p])) names.push_back(short_name(points[f].name));
  std::size_t others = 0;
  for (std::size_t q = 0; q < points.size(); ++q)
    others += std::find(front.begin(), front.end(), q) == front.end() && dominates(points[q], points[p]);
  if (names.empty() && others == 0) return "—";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 2; ++i) out += (i ? "; " : "") + names[i];
  const std::size_t more = others + (names.size() > 2 ? names.size() - 2 : 0);
  if (more > 0) out += fmt::format("{}{} more", out.empty() ? "" : " and ", more);
  return out;
}

std::string frontier_table(const std::vector<FrontierPoint>& points, bool with_acceptance) {
  const std::vector<std::size_t> front = frontier(points);
  std::vector<std::size_t> order(points.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return points[a].cost_nusd < points[b].cost_nusd; });
  std::string out = std::string("| config | cost with re-fetch, x uncompacted | evidence visible | probes | ") +
                    (with_acceptance ? fmt::format("cost ≤ {:g}x, evidence ≥ {:g}% | ", kAcceptedCost, kAcceptedEvidence) : "") +
                    "on the frontier | dominated by |\n|---|---:|---:|---:|" + (with_acceptance ? "---|" : "") + "---|---|\n";
  for (std::size_t i : order) {
    const FrontierPoint& p = points[i];
    const bool on = std::find(front.begin(), front.end(), i) != front.end();
    out += fmt::format("| {} | {:.3f}x | {:.1f}% | {} | {}{} | {} |\n", p.name, p.cost, p.evidence, p.probes,
                       with_acceptance ? std::string(accepted(p) ? "yes" : "no") + " | " : "", on ? "yes" : "no", dominated_by(points, front, i));
  }
  return out;
}

std::vector<std::string> point_colors(const std::vector<FrontierPoint>& points, std::size_t configs) {
  std::vector<std::string> colors;
  for (const auto& p : points)
    colors.push_back(p.config_index >= configs ? "#7f7f7f" : kPointColors[p.config_index % (sizeof kPointColors / sizeof *kPointColors)]);
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
      sessions, frontier_table(all, false));
  const std::vector<std::string> names = long_sessions(results, results.sweep_long_sessions);
  if (names.empty()) return out + fmt::format("\nNo session's uncompacted history passes {} tokens.\n", results.sweep_long_sessions);
  const std::vector<FrontierPoint> longer = frontier_points(results, keep_long(results));
  out += fmt::format("\nOver the {} sessions whose uncompacted history passes {} tokens:\n\n{}", names.size(), results.sweep_long_sessions,
                     frontier_table(longer, true));
  std::string meeting;
  for (const auto& p : longer)
    if (accepted(p) && p.config_index < results.configs.size()) meeting += (meeting.empty() ? "" : "; ") + p.name;
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
