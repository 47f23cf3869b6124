// Calibrating the calibrated meter on a folder of Claude Code logs: per model family, the robust
// fit of the prompt growth between a session's calls over the base meter's count (on the fitting
// half of the sessions), and every meter's error predicting the held-out half. A fit that
// predicts worse than the same fit over chars/4 is refused.
#pragma once

#include "calibrate/recorded_calls.hpp"

#include "compactor/error.hpp"
#include "meter/calibration_fit.hpp"

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace compactor::calibrate {

// Fitting calls left out as outliers (a step into context the log does not show), and where.
struct Outliers {
  std::size_t calls = 0;
  std::set<std::string> sessions;  // their ids
};

// A meter's relative error predicting the held-out calls' prompt tokens.
struct HeldOutError {
  std::string meter;
  double median = 0, p90 = 0;
  std::size_t calls = 0;
};

struct Calibration {
  std::string corpus;
  std::string base;  // the exact meter the fit scales
  CallCounts counts;
  std::size_t held_out_sessions = 0;
  std::size_t fit_calls = 0, held_out_calls = 0;  // compared besides each session's first
  CalibrationFit fit;
  std::map<std::string, Outliers> outliers;  // by family
  std::vector<HeldOutError> errors;          // compared_meters(), then calibrated and chars4-fit
  std::string refusal;                       // why the fit is not to be trusted; empty when it is
};

// Calibrates on the Claude Code logs (*.jsonl) below `corpus`. Errors: `corpus` is not a folder,
// `base` is not an exact meter, a meter cannot be loaded, or no call can be fitted.
Expected<Calibration> calibrate_corpus(const std::string& corpus, const std::string& base);

// What `compactor calibrate` prints: what was read and left out, the fit per family, its
// outliers, and the held-out error table.
std::string summary_text(const Calibration& c);

// The accuracy report (one JSON object and a newline): the same figures, and the refusal.
std::string report_json(const Calibration& c);

}  // namespace compactor::calibrate
