// The bench's SVG charts, drawn from its results: tokens sent per call over one session, and
// the cost per config accumulated over the corpus.
#pragma once

#include "bench/results.hpp"

#include <string>

namespace compactor::bench {

// Tokens sent per call, every config, over the results' chart session (default: the one with the
// most calls).
std::string tokens_chart_svg(const BenchResults& results);
// Cumulative cost per config over the corpus, sessions in path order.
std::string cost_chart_svg(const BenchResults& results);

}  // namespace compactor::bench
