// A robust linear fit through the origin, y ≈ a·x + b·n, for data where a few points break the
// model: how the calibrated meter is fitted to the prompt sizes an API reported (x: what the base
// meter counts, n: messages, y: reported tokens; a step into context the log does not show is
// such a point). Least squares, iteratively reweighted (Huber weights over a MAD scale), then
// least squares again on the points whose residual is within 3.5 robust standard deviations; the
// others are outliers.
#pragma once

#include <vector>

namespace compactor {

struct RobustFit {
  double a = 0, b = 0;
  bool ok = false;            // false when the points determine neither coefficient
  std::vector<bool> outlier;  // per point: left out of the final fit
};

// `x`, `n` and `y` are the same length. When x and n are collinear, b is 0 and a fits alone.
RobustFit robust_fit(const std::vector<double>& x, const std::vector<double>& n, const std::vector<double>& y);

}  // namespace compactor
