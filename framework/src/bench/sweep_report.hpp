// What a sweep is read for: each config's cost with re-fetch against uncompacted's and the
// evidence it kept visible, which configs are on the frontier and which dominate the others,
// over every session and again over the long ones (bench/frontier.hpp), as Markdown and charts.
#pragma once

#include "bench/results.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace compactor::bench {

// The frontier issue's acceptance for a default: at most half of uncompacted's cost with
// re-fetch, at least 97% of the evidence visible, on the long sessions.
inline constexpr double kAcceptedCost = 0.5;
inline constexpr double kAcceptedEvidence = 97.0;

// The sessions whose uncompacted history passes `tokens` at its largest request.
std::vector<std::string> long_sessions(const BenchResults& results, std::uint64_t tokens);

// The frontier tables: over every session, then over the long ones (results.sweep_long_sessions).
std::string sweep_report(const BenchResults& results);

// frontier.svg (every session) and frontier-long.svg (the long ones, when there are some).
std::vector<std::pair<std::string, std::string>> sweep_charts(const BenchResults& results);

}  // namespace compactor::bench
