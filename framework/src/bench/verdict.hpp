// What a person picks a pipeline from, before the full tables: which config is cheapest (cost
// with re-fetch, against uncompacted's on the same sessions), which keeps the most of the
// evidence the agent used, the cheapest that keeps nearly all of it, which are on the frontier
// and which dominate which, and what the figures cannot show (calls left over budget, refusals,
// failures).
#pragma once

#include "bench/frontier.hpp"
#include "bench/results.hpp"

#include <string>
#include <vector>

namespace compactor::bench {

// The share of the evidence the verdict's pick keeps at least (the frontier issue's acceptance).
inline constexpr double kPickEvidence = 97.0;

// The verdict as Markdown: its lines, then the table of cost against evidence (left out for a
// sweep, whose own section has it).
std::string verdict(const BenchResults& results);

// One row per point, cheapest first: its cost with re-fetch against uncompacted's, its evidence
// visible and probes, whether it is on the frontier, which points dominate it (the frontier's
// first, two named and how many more). `full_names`: a point's path (a sweep's settings), else
// its short name; `acceptance`: a column for the frontier issue's acceptance (sweep_report.hpp).
std::string frontier_table(const std::vector<FrontierPoint>& points, bool full_names, bool acceptance);

}  // namespace compactor::bench
