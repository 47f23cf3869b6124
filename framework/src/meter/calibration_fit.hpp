// The fit `compactor calibrate --out` writes and a `calibrated` meter reads: per model family, a
// linear model of the prompt tokens the API reported over an exact meter's count,
//   tokens(message) = per_token × base_tokens(message) + per_message,
// fitted on the growth of each session's prompt from its first call (the fixed system prompt
// and tools, `overhead`, cancel out and are reported apart).
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace compactor {

struct FamilyFit {
  double per_token = 1.0;
  double per_message = 0.0;
  std::uint64_t calls = 0;         // fitted on
  std::uint64_t sessions = 0;
  std::uint64_t overhead_median = 0;  // tokens before the first message (system prompt, tools)
};

struct CalibrationFit {
  std::string base = "claude-legacy";  // the meter the fit scales
  std::string default_family;
  std::map<std::string, FamilyFit> families;

  // The named family's fit, or the default's when `name` is empty.
  Expected<FamilyFit> family(const std::string& name) const;
  std::string to_yaml(const std::string& provenance) const;
};

// Reads a fit; every error names the file, and the line where it has one.
Expected<CalibrationFit> read_calibration_fit(const std::string& path);

}  // namespace compactor
