#include "bench/verdict.hpp"

#include "bench/sweep_report.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace compactor::bench {

namespace {

bool accepted(const FrontierPoint& p) { return p.cost <= kAcceptedCost && p.evidence >= kAcceptedEvidence; }

bool on_frontier(const std::vector<std::size_t>& front, std::size_t i) { return std::find(front.begin(), front.end(), i) != front.end(); }

// "careful, default and 4 more": the points that dominate point `p`, the frontier's first.
std::string dominated_by(const std::vector<FrontierPoint>& points, const std::vector<std::size_t>& front, std::size_t p) {
  std::vector<std::string> names;
  for (std::size_t f : front)
    if (dominates(points[f], points[p])) names.push_back(points[f].name);
  std::size_t others = 0;
  for (std::size_t q = 0; q < points.size(); ++q) others += !on_frontier(front, q) && dominates(points[q], points[p]);
  if (names.empty() && others == 0) return "—";
  // The verdict joins its entries with "; ", so none here.
  const std::size_t more = others + (names.size() > 2 ? names.size() - 2 : 0);
  if (names.size() > 2) names.resize(2);
  if (more > 0) names.push_back(fmt::format("{} more", more));
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

std::string figures(const FrontierPoint& p) { return fmt::format("{} ({:.3f}x, {:.1f}%)", p.name, p.cost, p.evidence); }

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

// What the cost and evidence columns do not show, per config: calls over budget, refusals,
// failures, lost probes.
std::vector<std::string> caveats(const BenchResults& results) {
  struct Counts {
    std::uint64_t over = 0, tail = 0, refused = 0, over_window = 0, failed = 0, lost = 0;
  };
  std::vector<Counts> counts(results.configs.size());
  for (const auto& r : results.replays) {
    if (results.is_baseline(r) || r.config_index >= counts.size()) continue;
    Counts& c = counts[r.config_index];
    c.over += r.over_budget, c.tail += r.over_budget_tail, c.refused += r.refusals, c.over_window += r.over_window, c.failed += r.failures + r.rejections;
    c.lost += r.median.lost.size() + r.last.lost.size();
  }
  std::vector<std::string> out;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const Counts& c = counts[k];
    std::vector<std::string> parts;
    if (c.over) parts.push_back(fmt::format("{} call{} left over its budget", c.over, c.over == 1 ? "" : "s"));
    if (c.tail) parts.push_back(fmt::format("{} call{} whose protected tail alone is over it", c.tail, c.tail == 1 ? "" : "s"));
    if (c.refused) parts.push_back(fmt::format("{} refused by the window ({} still over after the reactive pipeline)", c.refused, c.over_window));
    if (c.failed) parts.push_back(fmt::format("{} failed call{} (exit 1)", c.failed, c.failed == 1 ? "" : "s"));
    if (c.lost) parts.push_back(fmt::format("{} probe{} lost (exit 1)", c.lost, c.lost == 1 ? "" : "s"));
    if (!parts.empty()) out.push_back(results.config_name(k) + ": " + list(parts));
  }
  return out;
}

std::string verdict_lines(const BenchResults& results, const std::vector<FrontierPoint>& points) {
  std::vector<std::size_t> configs;  // the points that are configs, not the baseline
  for (std::size_t i = 0; i < points.size(); ++i)
    if (points[i].config_index < results.configs.size()) configs.push_back(i);
  if (configs.empty()) return "";
  const auto cheaper = [&](std::size_t a, std::size_t b) { return points[a].cost_nusd < points[b].cost_nusd; };
  std::stable_sort(configs.begin(), configs.end(), cheaper);
  std::string out = "- Cheapest: " + figures(points[configs.front()]) + ".\n";
  double most = 0;
  for (std::size_t i : configs) most = std::max(most, points[i].evidence);
  std::vector<std::string> keeping;
  for (std::size_t i : configs)
    if (points[i].evidence == most) keeping.push_back(points[i].name);
  const auto first_keeping = std::find_if(configs.begin(), configs.end(), [&](std::size_t i) { return points[i].evidence == most; });
  out += fmt::format("- Most evidence kept ({:.1f}%): {}{}.\n", most, keeping.size() > 6 ? fmt::format("{} configs", keeping.size()) : list(keeping),
                     keeping.size() > 1 ? "; the cheapest of them " + figures(points[*first_keeping]) : "");
  const auto pick = std::find_if(configs.begin(), configs.end(), [&](std::size_t i) { return points[i].evidence >= kPickEvidence; });
  out += pick == configs.end() ? fmt::format("- No config keeps {:g}% of the evidence.\n", kPickEvidence)
                               : fmt::format("- Cheapest keeping at least {:g}% of the evidence: {}.\n", kPickEvidence, figures(points[*pick]));
  const std::vector<std::size_t> front = frontier(points);
  std::vector<std::string> on, dominated;
  for (std::size_t i : front) on.push_back(figures(points[i]));
  for (std::size_t i : configs)
    if (!on_frontier(front, i)) dominated.push_back(points[i].name + " by " + dominated_by(points, front, i));
  out += "- On the frontier (no config costs no more with no less evidence): " + list(on) + ".\n";
  std::string joined;
  for (const auto& d : dominated) joined += (joined.empty() ? "" : "; ") + d;
  // A sweep's dozens of points: how many, the table says by which.
  if (dominated.size() > 8) out += fmt::format("- Dominated: {} of the {} configs (the table says by which).\n", dominated.size(), configs.size());
  else if (!dominated.empty()) out += "- Dominated: " + joined + ".\n";
  for (const auto& c : caveats(results)) out += "- " + c + ".\n";
  return out;
}

}  // namespace

std::string frontier_table(const std::vector<FrontierPoint>& points, bool full_names, bool acceptance) {
  const std::vector<std::size_t> front = frontier(points);
  std::vector<std::size_t> order(points.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return points[a].cost_nusd < points[b].cost_nusd; });
  std::string out = std::string("| config | cost with re-fetch, x uncompacted | evidence visible | probes | ") +
                    (acceptance ? fmt::format("cost ≤ {:g}x, evidence ≥ {:g}% | ", kAcceptedCost, kAcceptedEvidence) : "") +
                    "on the frontier | dominated by |\n|---|---:|---:|---:|" + (acceptance ? "---|" : "") + "---|---|\n";
  for (std::size_t i : order) {
    const FrontierPoint& p = points[i];
    out += fmt::format("| {} | {:.3f}x | {:.1f}% | {} | {}{} | {} |\n", full_names ? p.path : p.name, p.cost, p.evidence, p.probes,
                       acceptance ? std::string(accepted(p) ? "yes" : "no") + " | " : "", on_frontier(front, i) ? "yes" : "no",
                       dominated_by(points, front, i));
  }
  return out;
}

std::string verdict(const BenchResults& results) {
  const std::vector<FrontierPoint> points = frontier_points(results);
  std::size_t sessions = 0, calls = 0;
  std::uint64_t probes = 0;
  for (const auto& r : results.replays)
    if (results.is_baseline(r)) ++sessions, calls += r.evidence.calls, probes += r.evidence.probes;
  std::string out = fmt::format(
      "Verdict, over {} session{}: cost with re-fetch (what missed evidence costs to fetch again) as a multiple of uncompacted's; "
      "evidence visible: the share of the {} line{} the agent went on to use (at {} call{}) still in the request sent.\n\n",
      sessions, sessions == 1 ? "" : "s", probes, probes == 1 ? "" : "s", calls, calls == 1 ? "" : "s");
  std::vector<std::string> names;
  for (std::size_t k = 0; k < results.configs.size(); ++k)
    if (results.config_name(k) != results.config_path(k)) names.push_back(results.config_name(k) + " = " + results.config_path(k));
  if (!names.empty() && results.sweep_long_sessions == 0) out += "Configs: " + list(names) + ".\n\n";
  if (probes == 0) out += "- No session has evidence probes: the evidence column cannot tell these configs apart.\n";
  out += verdict_lines(results, points);
  if (results.sweep_long_sessions == 0) out += "\n" + frontier_table(points, false, false);
  return out + "\n";
}

}  // namespace compactor::bench
