#include "bench/palette.hpp"

#include <fmt/core.h>

#include <cmath>

namespace compactor::bench {

namespace {

// Tableau 10 without its grey (the baseline's) and its olive (next to the category ramp).
const char* const kConfigColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr std::size_t kNamed = sizeof kConfigColors / sizeof *kConfigColors;
constexpr const char* kBaselineColor = "#7f7f7f";
// Pale gold to dark olive: ordered like the categories it colours, and no config's hue.
const char* const kCategoryColors[] = {"#f3e79b", "#d9b44a", "#a07b1d", "#54420b"};

// A saturated mid-light colour at `hue` degrees (HSL with s 0.6, l 0.42), as #rrggbb.
std::string hsl(double hue) {
  const double s = 0.6, l = 0.42, c = (1 - std::abs(2 * l - 1)) * s, h = hue / 60.0;
  const double x = c * (1 - std::abs(std::fmod(h, 2.0) - 1)), m = l - c / 2;
  double r = 0, g = 0, b = 0;
  if (h < 1) r = c, g = x;
  else if (h < 2) r = x, g = c;
  else if (h < 3) g = c, b = x;
  else if (h < 4) g = x, b = c;
  else if (h < 5) r = x, b = c;
  else r = c, b = x;
  auto byte = [](double v) { return static_cast<int>(std::lround(v * 255)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(r + m), byte(g + m), byte(b + m));
}

}  // namespace

std::string config_color(std::uint64_t index, std::uint64_t configs) {
  if (index >= configs) return kBaselineColor;
  if (index < kNamed) return kConfigColors[index];
  // Past the named ones (a sweep's points): hues a golden angle apart, none in the categories'
  // yellows (40 to 70 degrees), so that no two neighbours look alike.
  double hue = std::fmod(static_cast<double>(index - kNamed) * 137.508 + 200.0, 330.0);
  if (hue >= 40) hue += 30;
  return hsl(hue);
}

std::string category_color(std::size_t index) { return kCategoryColors[index % (sizeof kCategoryColors / sizeof *kCategoryColors)]; }

}  // namespace compactor::bench
