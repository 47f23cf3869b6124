// A sweep: a grid of budgets, stage parameters and stage orderings over one base config, each
// point a config of the bench, so that the frontier of cost against evidence can be read off one
// run (bench/frontier.hpp). The file:
//
//   base: ../configs/default.yaml          # relative to the sweep file
//   grid:                                  # every combination of these values
//     budget.trigger: [0.3, 0.5, 0.8]      # SECTION.KEY of the config
//     summarize.keep_fraction: [0.25, 0.5] # STAGE.PARAM of a stage of the base pipeline
//   orderings:                             # optional: the base's stages in another order; a
//     - [compact_request, micro, summarize]  # stage left out is dropped
//   configs: [../configs/peers/codex-auto-compact.yaml]  # optional: more points, as they are
//   long_sessions: 80000                   # the frontier again over the sessions whose
//                                          # uncompacted history passes this many tokens
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace compactor::bench {

struct SweepPoint {
  std::string name;  // "sweep-file #3: budget.trigger=0.3, summarize.keep_fraction=0.5"
  std::string yaml;  // the base's print-pipeline text with the point's values
};

struct Sweep {
  std::string base;                  // the base config, as a path from the working folder
  std::vector<SweepPoint> points;    // grid order: the last key varies fastest, orderings outermost
  std::vector<std::string> configs;  // the fixed configs, as paths from the working folder
  std::uint64_t long_sessions = 80000;
};

// Reads a sweep file and makes its points; the base config is loaded (its plugins too) to print
// its resolved pipeline. Every error is a located line (`FILE:line:col: grid.KEY: …`).
Expected<Sweep> read_sweep(const std::string& file);

}  // namespace compactor::bench
