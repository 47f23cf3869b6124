#include "bench/charts.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace compactor::bench {

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A line chart: one polyline per series over a shared x range, axes labelled with their maxima.
struct Series {
  std::string name;
  std::vector<double> y;
};

std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                       const std::vector<Series>& series) {
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  const double w = 800, h = 420, left = 80, right = 20, top = 40, bottom = 90;
  std::size_t n = 0;
  double y_max = 0;
  for (const auto& s : series) {
    n = std::max(n, s.y.size());
    for (double v : s.y) y_max = std::max(y_max, v);
  }
  if (y_max <= 0) y_max = 1;
  auto px = [&](std::size_t i) { return left + (n <= 1 ? 0.0 : (w - left - right) * static_cast<double>(i) / static_cast<double>(n - 1)); };
  auto py = [&](double v) { return top + (h - top - bottom) * (1.0 - v / y_max); };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{:.0f}\" y=\"22\" font-size=\"15\">{}</text>\n",
      w, h, w, h, left, xml_escape(title));
  out += fmt::format("<line x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{0:.0f}\" y2=\"{2:.0f}\" stroke=\"black\"/>\n", left, top, h - bottom);
  out += fmt::format("<line x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{2:.0f}\" y2=\"{1:.0f}\" stroke=\"black\"/>\n", left, h - bottom, w - right);
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n", left - 4, top + 4,
                     y_max >= 100 ? fmt::format("{:.0f}", y_max) : fmt::format("{:.2f}", y_max));
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">0</text>\n", left - 4, h - bottom + 4);
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\">1</text>\n", left, h - bottom + 16);
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n", w - right, h - bottom + 16, n);
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n", (left + w - right) / 2, h - bottom + 16,
                     xml_escape(x_label));
  out += fmt::format("<text x=\"14\" y=\"{:.0f}\" transform=\"rotate(-90 14 {:.0f})\" text-anchor=\"middle\">{}</text>\n",
                     (top + h - bottom) / 2, (top + h - bottom) / 2, xml_escape(y_label));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* color = colors[k % (sizeof colors / sizeof *colors)];
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"", color);
    for (std::size_t i = 0; i < series[k].y.size(); ++i)
      out += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", px(i), py(series[k].y[i]));
    out += "\"/>\n";
    double ly = h - bottom + 34 + 14 * static_cast<double>(k);
    out += fmt::format("<line x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{2:.0f}\" y2=\"{1:.0f}\" stroke=\"{3}\" stroke-width=\"3\"/>", left,
                       ly - 4, left + 20, color);
    out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", left + 26, ly, xml_escape(series[k].name));
  }
  return out + "</svg>\n";
}

}  // namespace

std::string tokens_chart_svg(const BenchResults& results) {
  std::string session = results.chart_session;
  if (session.empty()) {
    std::size_t most = 0;
    for (const auto& r : results.replays)
      if (r.calls.size() > most) most = r.calls.size(), session = r.session;
  }
  std::vector<Series> series;
  for (const auto& r : results.replays) {
    if (r.session != session) continue;
    Series s{results.configs.at(r.config_index).path, {}};
    for (const auto& c : r.calls) s.y.push_back(static_cast<double>(c.sent));
    series.push_back(std::move(s));
  }
  return line_chart("Tokens sent per call: " + session, "call", "tokens sent", series);
}

std::string cost_chart_svg(const BenchResults& results) {
  std::vector<Series> series;
  for (std::size_t k = 0; k < results.configs.size(); ++k) {
    Series s{results.configs[k].path, {}};
    double total = 0;
    for (const auto& r : results.replays)
      if (r.config_index == k) s.y.push_back(total += to_usd(r.cost_nusd));
    series.push_back(std::move(s));
  }
  return line_chart("Cumulative cost over the corpus (USD)", "session (in path order)", "USD", series);
}

}  // namespace compactor::bench
