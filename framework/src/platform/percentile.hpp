// The p-quantile of some values (0 <= p <= 1), interpolated between the two nearest ranks (the
// usual definition, R's type 7); 0 for no values. One definition for every figure Compactor
// reports (the bench's pipeline times, calibration's errors and overheads).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace compactor {

inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double at = p * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (at - static_cast<double>(lo));
}

}  // namespace compactor
