#include "bench/charts.hpp"

#include "bench/frontier.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

namespace compactor::bench {

namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr const char* kBaselineColor = "#7f7f7f";

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

// A config's colour; the baseline's is grey.
std::string color_of(const BenchResults& results, std::uint64_t index) {
  if (index >= results.configs.size()) return kBaselineColor;
  return kColors[index % (sizeof kColors / sizeof *kColors)];
}

// Round tick steps (1, 2 or 5 times a power of ten) giving about `count` ticks up to `max`.
double tick_step(double max, int count) {
  if (max <= 0) return 1;
  const double raw = max / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

using Format = std::function<std::string(double)>;

std::string tokens_label(double v) {
  if (v >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}
std::string usd_label(double v) {
  if (v <= 0) return "$0";
  return v >= 10 ? fmt::format("${:.0f}", v) : v >= 0.1 ? fmt::format("${:.2f}", v) : fmt::format("${:.3f}", v);
}
std::string percent_label(double v) { return fmt::format("{:g}%", v); }
std::string count_label(double v) { return fmt::format("{:g}", v); }

// The plot area of a chart and its scales.
struct Frame {
  double w = 900, h = 460, left = 90, right = 30, top = 46, bottom = 100;
  double x_max = 1, y_max = 1;
  double px(double x) const { return left + (w - left - right) * x / x_max; }
  double py(double y) const { return top + (h - top - bottom) * (1.0 - y / y_max); }
};

std::string svg_open(const Frame& f, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2:.0f}\" y=\"26\" font-size=\"15\">{3}</text>\n",
      f.w, f.h, f.left, xml_escape(title));
}

// Both axes with ticks, grid lines and labels; y's maximum is rounded up to a tick.
std::string axes(Frame& f, const std::string& x_label, const std::string& y_label, const Format& x_format, const Format& y_format) {
  const double ys = tick_step(f.y_max, 5), xs = tick_step(f.x_max, 8);
  f.y_max = std::max(ys, std::ceil(f.y_max / ys - 1e-9) * ys);
  std::string out;
  for (double y = 0; y <= f.y_max + ys / 2; y += ys)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       f.left, f.py(y), f.w - f.right, f.left - 6, f.py(y) + 4, xml_escape(y_format(y)));
  for (double x = 0; x <= f.x_max + xs / 100; x += xs)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                       f.px(x), f.h - f.bottom, f.h - f.bottom + 5, f.h - f.bottom + 18, xml_escape(x_format(x)));
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>\n", f.left, f.top, f.h - f.bottom);
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"black\"/>\n", f.left, f.h - f.bottom, f.w - f.right);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (f.left + f.w - f.right) / 2, f.h - f.bottom + 36,
                     xml_escape(x_label));
  out += fmt::format("<text x=\"16\" y=\"{0:.1f}\" transform=\"rotate(-90 16 {0:.1f})\" text-anchor=\"middle\">{1}</text>\n",
                     (f.top + f.h - f.bottom) / 2, xml_escape(y_label));
  return out;
}

// A legend of `items` (name, colour, dashed?) under the x axis's label, in rows of three across
// the chart's width.
std::string legend(const Frame& f, const std::vector<std::tuple<std::string, std::string, bool>>& items, std::size_t columns = 3) {
  std::string out;
  const double column = (f.w - 40) / static_cast<double>(columns);
  for (std::size_t k = 0; k < items.size(); ++k) {
    const auto& [name, color, dashed] = items[k];
    const double x = 20 + column * static_cast<double>(k % columns), y = f.h - f.bottom + 56 + 16 * static_cast<double>(k / columns);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"{4}/>"
                       "<text x=\"{5:.1f}\" y=\"{6:.1f}\">{7}</text>\n",
                       x, y - 4, x + 22, color, dashed ? " stroke-dasharray=\"6 4\"" : "", x + 28, y, xml_escape(name));
  }
  return out;
}

struct Series {
  std::string name, color;
  std::vector<double> y;
};
struct Level {  // a horizontal line: a window or a budget limit
  std::string name, color;
  double y;
};

std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label, const std::vector<Series>& series,
                       const std::vector<Level>& levels, const Format& y_format) {
  Frame f;
  f.bottom = 60 + 16 * std::ceil(static_cast<double>(series.size() + levels.size()) / 3.0) + 20;
  std::size_t n = 1;
  f.y_max = 0;
  for (const auto& s : series) {
    n = std::max(n, s.y.size());
    for (double v : s.y) f.y_max = std::max(f.y_max, v);
  }
  for (const auto& l : levels) f.y_max = std::max(f.y_max, l.y);
  if (f.y_max <= 0) f.y_max = 1;
  f.x_max = static_cast<double>(n);
  std::string out = svg_open(f, title) + axes(f, x_label, y_label, count_label, y_format);
  std::vector<std::tuple<std::string, std::string, bool>> keys;
  for (const auto& s : series) {
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"", s.color);
    for (std::size_t i = 0; i < s.y.size(); ++i) out += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.px(static_cast<double>(i + 1)), f.py(s.y[i]));
    out += "\"/>\n";
    keys.emplace_back(s.name, s.color, false);
  }
  for (const auto& l : levels) {
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-dasharray=\"6 4\"/>\n", f.left,
                       f.py(l.y), f.w - f.right, l.color);
    keys.emplace_back(l.name, l.color, true);
  }
  return out + legend(f, keys) + "</svg>\n";
}

// Horizontal bars: one group per category, one bar per series in it (or the series stacked).
struct Bars {
  std::vector<std::string> categories;
  std::vector<Series> series;  // y[i]: the value for categories[i]
  bool stacked = false;
};

std::string bar_chart(const std::string& title, const std::string& x_label, const Bars& b, const Format& x_format, double x_max = 0) {
  Frame f;
  const double per = b.stacked ? 18 : 8 * static_cast<double>(b.series.size()) + 6;
  f.left = 40;
  for (const auto& c : b.categories) f.left = std::max(f.left, 12 + 6.5 * static_cast<double>(std::min<std::size_t>(c.size(), 60)));
  f.bottom = 60 + 16 * std::ceil(static_cast<double>(b.series.size()) / 3.0) + 20;
  f.h = f.top + f.bottom + per * static_cast<double>(b.categories.size()) + 10;
  f.w = std::max(900.0, f.left + 640);
  for (std::size_t i = 0; i < b.categories.size(); ++i) {
    double sum = 0;
    for (const auto& s : b.series) sum = b.stacked ? sum + s.y[i] : std::max(sum, s.y[i]);
    f.x_max = std::max(f.x_max, sum);
  }
  if (x_max > 0) f.x_max = x_max;
  // Bars run along x: the axes are drawn with x as the value axis.
  const double xs = tick_step(f.x_max, 6);
  f.x_max = std::max(xs, std::ceil(f.x_max / xs - 1e-9) * xs);
  std::string out = svg_open(f, title);
  const double base = f.h - f.bottom;
  for (double x = 0; x <= f.x_max + xs / 100; x += xs)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                       f.px(x), f.top, base + 5, base + 18, xml_escape(x_format(x)));
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>\n", f.left, f.top, base);
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"black\"/>\n", f.left, base, f.w - f.right);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (f.left + f.w - f.right) / 2, base + 36, xml_escape(x_label));
  for (std::size_t i = 0; i < b.categories.size(); ++i) {
    const double y0 = f.top + 4 + per * static_cast<double>(i);
    std::string label = b.categories[i].size() > 60 ? "…" + b.categories[i].substr(b.categories[i].size() - 59) : b.categories[i];
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\">{}</text>\n", f.left - 6, y0 + (per - 6) / 2 + 4,
                       xml_escape(label));
    double at = 0;
    for (std::size_t k = 0; k < b.series.size(); ++k) {
      const double v = b.series[k].y[i], y = b.stacked ? y0 : y0 + 8 * static_cast<double>(k), hgt = b.stacked ? per - 6 : 7;
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", f.px(b.stacked ? at : 0), y,
                         std::max(0.0, f.px(v) - f.left), hgt, b.series[k].color);
      if (b.stacked) at += v;
    }
  }
  std::vector<std::tuple<std::string, std::string, bool>> keys;
  for (const auto& s : b.series) keys.emplace_back(s.name, s.color, false);
  return out + legend(f, keys) + "</svg>\n";
}

std::vector<const SessionReplay*> replays_of(const BenchResults& results, const std::string& session) {
  std::vector<const SessionReplay*> out;
  for (const auto& r : results.replays)
    if (r.session == session) out.push_back(&r);
  return out;
}

std::string tokens_chart(const BenchResults& results) {
  std::string session = results.chart_session;
  if (session.empty()) {
    std::size_t most = 0;
    for (const auto& r : results.replays)
      if (r.calls.size() > most) most = r.calls.size(), session = r.session;
  }
  std::vector<Series> series;
  std::vector<Level> levels;
  std::uint64_t window = 0;
  for (const SessionReplay* r : replays_of(results, session)) {
    Series s{results.config_name(r->config_index), color_of(results, r->config_index), {}};
    for (const auto& c : r->calls) s.y.push_back(static_cast<double>(c.sent));
    series.push_back(std::move(s));
    window = std::max(window, r->window);
    if (r->limit > 0) levels.push_back({"limit of " + results.config_name(r->config_index), color_of(results, r->config_index), static_cast<double>(r->limit)});
  }
  if (window > 0) levels.push_back({"the model's window", "black", static_cast<double>(window)});
  return line_chart("Tokens sent per call: " + session, "call", "tokens sent", series, levels, tokens_label);
}

std::string cumulative_cost_chart(const BenchResults& results) {
  std::vector<Series> series;
  for (std::size_t k = 0; k <= results.configs.size(); ++k) {
    Series s{results.config_name(k), color_of(results, k), {}};
    double total = 0;
    for (const auto& r : results.replays)
      if (r.config_index == k) s.y.push_back(total += to_usd(r.cost_nusd));
    if (!s.y.empty()) series.push_back(std::move(s));
  }
  return line_chart("Cumulative cost over the corpus", "sessions (in path order)", "USD", series, {}, usd_label);
}

std::string cost_split_chart(const BenchResults& results) {
  Bars b;
  b.stacked = true;
  b.series = {{"cache read", "#1f77b4", {}}, {"cache write", "#d62728", {}}, {"uncached input", "#ff7f0e", {}}, {"output", "#2ca02c", {}}};
  for (std::size_t k = 0; k <= results.configs.size(); ++k) {
    std::uint64_t parts[4] = {0, 0, 0, 0};
    bool any = false;
    for (const auto& r : results.replays)
      if (r.config_index == k) {
        any = true;
        parts[0] += r.read_nusd, parts[1] += r.write_nusd, parts[2] += r.uncached_nusd, parts[3] += r.output_nusd;
      }
    if (!any) continue;
    b.categories.push_back(results.config_name(k));
    for (std::size_t p = 0; p < 4; ++p) b.series[p].y.push_back(to_usd(parts[p]));
  }
  return bar_chart("Cost by what is billed, over the corpus", "USD", b, usd_label);
}

// Sessions that some config compacted (the others cost the same in every row), else the dearest.
std::string cost_by_session_chart(const BenchResults& results) {
  std::map<std::string, std::uint64_t> compacted, cost;
  for (const auto& r : results.replays) {
    compacted[r.session] += r.compactions;
    cost[r.session] = std::max(cost[r.session], r.cost_nusd);
  }
  std::vector<std::string> sessions;
  for (const auto& [s, n] : compacted)
    if (n > 0) sessions.push_back(s);
  if (sessions.empty()) {
    for (const auto& [s, c] : cost) sessions.push_back(s);
    std::sort(sessions.begin(), sessions.end(), [&](const auto& a, const auto& b) { return cost[a] > cost[b]; });
  }
  if (sessions.size() > 30) sessions.resize(30);
  Bars b;
  for (std::size_t k = 0; k <= results.configs.size(); ++k) b.series.push_back({results.config_name(k), color_of(results, k), {}});
  for (const auto& s : sessions) {
    b.categories.push_back(s);
    for (auto& series : b.series) series.y.push_back(0);
    for (const SessionReplay* r : replays_of(results, s))
      if (r->config_index < b.series.size()) b.series[r->config_index].y.back() = to_usd(r->cost_nusd);
  }
  return bar_chart("Cost per session and config (sessions some config compacted)", "USD", b, usd_label);
}

std::string retention_chart(const BenchResults& results) {
  Bars b;
  b.series = {{"visible at the median call", "#9ecae1", {}},
              {"visible at the last call", "#3182bd", {}},
              {"paths + errors visible at the last call", "#e6550d", {}},
              {"recoverable", "#31a354", {}}};
  for (std::size_t k = 0; k <= results.configs.size(); ++k) {
    std::uint64_t pm = 0, vm = 0, pl = 0, vl = 0, f = 0, fv = 0, p = 0, rec = 0;
    bool any = false;
    for (const auto& r : results.replays)
      if (r.config_index == k) {
        any = true;
        pm += r.median.probes, vm += r.median.visible, pl += r.last.probes, vl += r.last.visible;
        f += r.last.facts, fv += r.last.facts_visible, p += r.median.probes + r.last.probes, rec += r.median.recoverable + r.last.recoverable;
      }
    if (!any) continue;
    auto pct = [](std::uint64_t a, std::uint64_t w) { return w == 0 ? 100.0 : 100.0 * static_cast<double>(a) / static_cast<double>(w); };
    b.categories.push_back(results.config_name(k));
    b.series[0].y.push_back(pct(vm, pm));
    b.series[1].y.push_back(pct(vl, pl));
    b.series[2].y.push_back(pct(fv, f));
    b.series[3].y.push_back(pct(rec, p));
  }
  return bar_chart("What the model still has, per config", "% of the session's probes", b, percent_label, 100);
}

// Each point's label beside it: its file's stem, so that a folder does not hide the name.
std::string point_label(const std::string& name) {
  if (const std::size_t hash = name.find(" #"); hash != std::string::npos) return name.substr(0, name.find(':', hash));  // a sweep's point
  const std::string stem = std::filesystem::path(name).stem().string();
  return stem.empty() ? name : stem;
}

}  // namespace

std::string frontier_chart(const std::string& title, const std::vector<FrontierPoint>& points, const std::vector<std::string>& colors,
                           bool label_all) {
  Frame f;
  f.right = 120;  // room for the labels of the dearest points
  // A sweep's points have long names: its legend (the frontier's points) is one a line.
  const std::size_t columns = label_all ? 3 : 1;
  f.bottom = 60 + 16 * std::ceil(static_cast<double>((label_all ? points.size() : frontier(points).size()) + 1) / static_cast<double>(columns)) + 20;
  // Evidence from a round step under the lowest point to 100%: the differences show.
  double low = 100;
  for (const auto& p : points) f.x_max = std::max(f.x_max, p.cost), low = std::min(low, p.evidence);
  const double step = tick_step(std::max(1.0, 100 - low), 5), y_low = std::max(0.0, std::floor((low - step / 2) / step) * step);
  f.y_max = 100 - y_low;
  f.x_max *= 1.05;
  std::string out = svg_open(f, title) + axes(f, "cost with re-fetch, x uncompacted (on the same sessions)", "evidence visible",
                                              [](double v) { return fmt::format("{:g}x", std::round(v * 100) / 100); },
                                              [y_low](double v) { return percent_label(v + y_low); });
  const std::vector<std::size_t> front = frontier(points);
  if (front.size() > 1) {
    out += "<polyline fill=\"none\" stroke=\"black\" stroke-width=\"1\" stroke-dasharray=\"4 3\" points=\"";
    for (std::size_t i = 0; i < front.size(); ++i)
      out += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.px(points[front[i]].cost), f.py(points[front[i]].evidence - y_low));
    out += "\"/>\n";
  }
  std::vector<std::tuple<std::string, std::string, bool>> keys;
  std::vector<std::pair<double, double>> placed;  // labels so far: a label near another moves down a line
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const double x = f.px(p.cost), y = f.py(p.evidence - y_low);
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", x, y, colors[i]);
    double ly = y - 6;
    while (std::any_of(placed.begin(), placed.end(), [&](const auto& q) { return std::abs(q.first - x) < 90 && std::abs(q.second - ly) < 12; }))
      ly += 13;
    if (label_all || std::find(front.begin(), front.end(), i) != front.end()) {
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", x + 8, ly, xml_escape(point_label(p.name)));
      placed.emplace_back(x, ly);
      keys.emplace_back(p.name, colors[i], false);  // the legend names the labelled points
    }
  }
  keys.emplace_back("the frontier: no config cheaper with as much evidence", "black", true);
  return out + legend(f, keys, columns) + "</svg>\n";
}

namespace {

std::string evidence_chart(const BenchResults& results) {
  const std::vector<FrontierPoint> points = frontier_points(results);
  std::vector<std::string> colors;
  for (const auto& p : points) colors.push_back(color_of(results, p.config_index));
  return frontier_chart("Evidence the agent used, still visible, against cost with re-fetch", points, colors, true);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> charts_svg(const BenchResults& results) {
  return {{"tokens-per-call.svg", tokens_chart(results)},
          {"cumulative-cost.svg", cumulative_cost_chart(results)},
          {"cost-split.svg", cost_split_chart(results)},
          {"cost-by-session.svg", cost_by_session_chart(results)},
          {"retention.svg", retention_chart(results)},
          {"evidence.svg", evidence_chart(results)}};
}

}  // namespace compactor::bench
