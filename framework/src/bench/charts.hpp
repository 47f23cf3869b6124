// The bench's SVG charts, drawn from its results, every axis with ticks, every config in its one
// colour (bench/palette.hpp) and by its short name, the baseline grey, dashed and under the
// configs, shares over the range of the data:
//   tokens-per-call.svg   tokens sent per call over one session, with its window and each
//                         config's budget limit (a chars or bytes one where it lies in tokens)
//   cumulative-cost.svg   the cost per config accumulated over the corpus, sessions in path order
//   cost-split.svg        each config's cost split into cache reads, cache writes, uncached input
//                         and output
//   cost-by-session.svg   each session's cost per config, sessions by name (those some config
//                         compacted, else the dearest)
//   retention.svg         the probes visible at the median and last call, the paths and errors
//                         visible at the last call, and what is recoverable, per config
//   evidence.svg          the frontier: per config, the evidence the agent used still visible
//                         against the cost with re-fetch (x uncompacted), the frontier joined
#pragma once

#include "bench/frontier.hpp"
#include "bench/results.hpp"

#include <string>
#include <utility>
#include <vector>

namespace compactor::bench {

// Every chart: its file name and its SVG.
std::vector<std::pair<std::string, std::string>> charts_svg(const BenchResults& results);

// Cost against evidence, a point per config in `colors` (one each), the frontier joined; labels
// beside every point, or beside the frontier's only.
std::string frontier_chart(const std::string& title, const std::vector<FrontierPoint>& points, const std::vector<std::string>& colors,
                           bool label_all);

}  // namespace compactor::bench
