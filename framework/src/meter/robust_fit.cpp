#include "meter/robust_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace compactor {

RobustFit robust_fit(const std::vector<double>& x, const std::vector<double>& n, const std::vector<double>& y) {
  const std::size_t count = x.size();
  RobustFit fit;
  fit.outlier.assign(count, false);
  std::vector<double> w(count, 1.0), residual(count, 0.0);
  auto solve = [&]() {
    double xx = 0, xn = 0, nn = 0, xy = 0, ny = 0;
    for (std::size_t i = 0; i < count; ++i) {
      xx += w[i] * x[i] * x[i], xn += w[i] * x[i] * n[i], nn += w[i] * n[i] * n[i];
      xy += w[i] * x[i] * y[i], ny += w[i] * n[i] * y[i];
    }
    double det = xx * nn - xn * xn;
    if (std::abs(det) > 1e-9 * std::max(1.0, xx * nn)) {
      fit.a = (xy * nn - ny * xn) / det;
      fit.b = (xx * ny - xn * xy) / det;
    } else if (xx > 0) {
      fit.a = xy / xx;
      fit.b = 0;
    } else {
      return false;
    }
    for (std::size_t i = 0; i < count; ++i) residual[i] = y[i] - fit.a * x[i] - fit.b * n[i];
    return true;
  };
  // Robust scale: 1.4826 × the median absolute residual, at least one token (rounding).
  auto scale = [&]() {
    std::vector<double> abs_r(count);
    for (std::size_t i = 0; i < count; ++i) abs_r[i] = std::abs(residual[i]);
    if (abs_r.empty()) return 1.0;
    std::nth_element(abs_r.begin(), abs_r.begin() + static_cast<std::ptrdiff_t>(abs_r.size() / 2), abs_r.end());
    return std::max(1.0, 1.4826 * abs_r[abs_r.size() / 2]);
  };
  if (!solve()) return fit;
  for (int iteration = 0; iteration < 30; ++iteration) {
    const double s = scale(), k = 1.345 * s;
    for (std::size_t i = 0; i < count; ++i) w[i] = std::abs(residual[i]) <= k ? 1.0 : k / std::abs(residual[i]);
    double a = fit.a, b = fit.b;
    if (!solve()) return fit;
    if (std::abs(fit.a - a) < 1e-7 * std::max(1.0, std::abs(a)) && std::abs(fit.b - b) < 1e-5 * std::max(1.0, std::abs(b))) break;
  }
  const double cut = 3.5 * scale();
  for (std::size_t i = 0; i < count; ++i) {
    fit.outlier[i] = std::abs(residual[i]) > cut;
    w[i] = fit.outlier[i] ? 0.0 : 1.0;
  }
  fit.ok = solve();
  return fit;
}

}  // namespace compactor
