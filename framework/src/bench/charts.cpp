#include "bench/charts.hpp"

#include "bench/frontier.hpp"
#include "bench/palette.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

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

std::string color_of(const BenchResults& results, std::uint64_t index) { return config_color(index, results.configs.size()); }

// Round tick steps (1, 2 or 5 times a power of ten) giving about `count` ticks over `span`.
double tick_step(double span, int count) {
  if (span <= 0) return 1;
  const double raw = span / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

// The range of the data, widened to at least `min_span` and out to round ticks: a chart whose
// values all lie between 98% and 100% shows them apart, not as one bar at the top of 0-100%.
std::pair<double, double> data_range(double lo, double hi, double min_span, double floor_at, double ceil_at) {
  const bool narrow = hi - lo < min_span;  // widened: no margin beyond
  if (narrow) {
    const double mid = (lo + hi) / 2;
    lo = mid - min_span / 2, hi = mid + min_span / 2;
    if (hi > ceil_at) lo -= hi - ceil_at, hi = ceil_at;
    if (lo < floor_at) hi += floor_at - lo, lo = floor_at;
  }
  const double pad = narrow ? 0 : (hi - lo) * 0.06, step = tick_step(hi - lo + 2 * pad, 5);
  return {std::max(floor_at, std::floor((lo - pad) / step) * step), std::min(ceil_at, std::ceil((hi + pad) / step) * step)};
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
std::string percent_label(double v) { return fmt::format("{:g}%", std::round(v * 100) / 100); }
std::string count_label(double v) { return fmt::format("{:g}", v); }
std::string grouped(std::uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// The width of a label at the charts' 12 px sans-serif, roughly (no font is measured here).
double text_width(const std::string& s, double px = 12) { return 0.56 * px * static_cast<double>(s.size()); }

// The plot area of a chart and its scales.
struct Frame {
  double w = 900, h = 460, left = 90, right = 30, top = 46, bottom = 100;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double px(double x) const { return left + (w - left - right) * (x - x_min) / (x_max - x_min); }
  double py(double y) const { return top + (h - top - bottom) * (1.0 - (y - y_min) / (y_max - y_min)); }
};

std::string svg_open(const Frame& f, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2:.0f}\" y=\"26\" font-size=\"15\">{3}</text>\n",
      f.w, f.h, std::min(f.left, 20.0), xml_escape(title));
}

// Both axes with ticks, grid lines and labels; each range is rounded out to its ticks.
std::string axes(Frame& f, const std::string& x_label, const std::string& y_label, const Format& x_format, const Format& y_format) {
  const double ys = tick_step(f.y_max - f.y_min, 5), xs = tick_step(f.x_max - f.x_min, 8);
  f.y_min = std::floor(f.y_min / ys + 1e-9) * ys, f.y_max = std::max(f.y_min + ys, std::ceil(f.y_max / ys - 1e-9) * ys);
  f.x_min = std::floor(f.x_min / xs + 1e-9) * xs, f.x_max = std::max(f.x_min + xs, std::ceil(f.x_max / xs - 1e-9) * xs);
  std::string out;
  for (double y = f.y_min; y <= f.y_max + ys / 2; y += ys)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       f.left, f.py(y), f.w - f.right, f.left - 6, f.py(y) + 4, xml_escape(y_format(y)));
  for (double x = f.x_min; x <= f.x_max + xs / 100; x += xs)
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

// A legend entry: its name, its colour and how it is drawn.
struct Key {
  std::string name, color;
  bool dashed = false;
  bool swatch = false;  // a filled square (a bar's category), else a line
};

// As many columns as the longest name leaves room for across `width`.
std::size_t legend_columns(const std::vector<Key>& keys, double width) {
  double longest = 0;
  for (const auto& k : keys) longest = std::max(longest, text_width(k.name));
  return std::max<std::size_t>(1, static_cast<std::size_t>((width - 20) / (longest + 40)));
}

double legend_height(const std::vector<Key>& keys, double width) {
  return 16 * std::ceil(static_cast<double>(keys.size()) / static_cast<double>(legend_columns(keys, width)));
}

// The legend under the x axis's label.
std::string legend(const Frame& f, const std::vector<Key>& keys) {
  std::string out;
  const std::size_t columns = legend_columns(keys, f.w);
  const double column = (f.w - 40) / static_cast<double>(columns);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const Key& key = keys[k];
    const double x = 20 + column * static_cast<double>(k % columns), y = f.h - f.bottom + 56 + 16 * static_cast<double>(k / columns);
    if (key.swatch)
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"22\" height=\"9\" fill=\"{}\" stroke=\"#555\" stroke-width=\"0.5\"/>", x, y - 9,
                         key.color);
    else
      out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"{4}/>", x, y - 4, x + 22,
                         key.color, key.dashed ? " stroke-dasharray=\"6 4\"" : "");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x + 28, y, xml_escape(key.name));
  }
  return out;
}

struct Series {
  std::string name, color;
  std::vector<double> y;
  bool dashed = false;
};
// A limit across the chart: the window, a budget's limit.
struct Level {
  std::string name, color;
  std::vector<double> y;  // its one value
};

std::string polyline(const Frame& f, const std::vector<double>& y, const std::string& color, const std::string& style) {
  std::string out = fmt::format("<polyline fill=\"none\" stroke=\"{}\"{} points=\"", color, style);
  for (std::size_t i = 0; i < y.size(); ++i) out += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.px(static_cast<double>(i + 1)), f.py(y[i]));
  return out + "\"/>\n";
}

// Lines over calls or sessions. The series are drawn last first, so the first (the first config)
// lies on top and the baseline, given last and dashed, underneath every config.
std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label, const std::vector<Series>& series,
                       const std::vector<Level>& levels, const Format& y_format) {
  std::vector<Key> keys;
  for (const auto& s : series) keys.push_back({s.name, s.color, s.dashed});
  for (const auto& l : levels) keys.push_back({l.name, l.color, true});
  Frame f;
  f.bottom = 60 + legend_height(keys, f.w) + 20;
  f.h = 360 + f.bottom;
  std::size_t n = 1;
  f.y_max = 0;
  for (const auto& s : series) {
    n = std::max(n, s.y.size());
    for (double v : s.y) f.y_max = std::max(f.y_max, v);
  }
  for (const auto& l : levels)
    for (double v : l.y) f.y_max = std::max(f.y_max, v);
  if (f.y_max <= 0) f.y_max = 1;
  f.x_max = static_cast<double>(n);
  std::string out = svg_open(f, title) + axes(f, x_label, y_label, count_label, y_format);
  for (const auto& l : levels)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-dasharray=\"6 4\"/>\n", f.left,
                       f.py(l.y.front()), f.w - f.right, l.color);
  for (auto s = series.rbegin(); s != series.rend(); ++s)
    out += polyline(f, s->y, s->color, s->dashed ? " stroke-width=\"2\" stroke-dasharray=\"7 4\"" : " stroke-width=\"1.8\"");
  return out + legend(f, keys) + "</svg>\n";
}

// Horizontal bars: one group per category, one bar per series in it (or the series stacked).
struct Bars {
  std::vector<std::string> categories;
  std::vector<std::string> category_colors;  // a swatch beside each category's name (its config's colour), or none
  std::vector<Series> series;                // y[i]: the value for categories[i]
  bool stacked = false;
  double x_min = 0, x_max = 0;  // the value axis (x_max 0: from the data)
};

// A bar chart's frame: its left margin holds the categories' names and swatches.
Frame bar_frame(const Bars& b, double per, const std::vector<Key>& keys) {
  Frame f;
  f.left = 40;
  for (const auto& c : b.categories) f.left = std::max(f.left, 30 + text_width(c.substr(0, 60), 11));
  f.w = std::max(900.0, f.left + 640);
  f.bottom = 60 + legend_height(keys, f.w) + 20;
  f.h = f.top + f.bottom + per * static_cast<double>(b.categories.size()) + 10;
  f.x_min = b.x_min;
  for (std::size_t i = 0; i < b.categories.size(); ++i) {
    double sum = 0;
    for (const auto& s : b.series) sum = b.stacked ? sum + s.y[i] : std::max(sum, s.y[i]);
    f.x_max = std::max(f.x_max, sum);
  }
  if (b.x_max > 0) f.x_max = b.x_max;
  const double xs = tick_step(f.x_max - f.x_min, 6);
  f.x_max = std::max(f.x_min + xs, std::ceil(f.x_max / xs - 1e-9) * xs);
  return f;
}

std::string bar_chart(const std::string& title, const std::string& x_label, const Bars& b, const Format& x_format) {
  const double per = b.stacked ? 18 : 8 * static_cast<double>(b.series.size()) + 6;
  std::vector<Key> keys;
  for (const auto& s : b.series) keys.push_back({s.name, s.color, false, true});
  Frame f = bar_frame(b, per, keys);
  const double xs = tick_step(f.x_max - f.x_min, 6), base = f.h - f.bottom;
  std::string out = svg_open(f, title);
  for (double x = f.x_min; x <= f.x_max + xs / 100; x += xs)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                       f.px(x), f.top, base + 5, base + 18, xml_escape(x_format(x)));
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>\n", f.left, f.top, base);
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"black\"/>\n", f.left, base, f.w - f.right);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", (f.left + f.w - f.right) / 2, base + 36, xml_escape(x_label));
  for (std::size_t i = 0; i < b.categories.size(); ++i) {
    const double y0 = f.top + 4 + per * static_cast<double>(i), mid = y0 + (per - 6) / 2;
    const std::string& c = b.categories[i];
    std::string label = c.size() > 60 ? "…" + c.substr(c.size() - 59) : c;
    if (i < b.category_colors.size())
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n", f.left - 16, mid - 5, b.category_colors[i]);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\">{}</text>\n", f.left - 20, mid + 4, xml_escape(label));
    double at = f.x_min;
    for (std::size_t k = 0; k < b.series.size(); ++k) {
      const double v = b.series[k].y[i], y = b.stacked ? y0 : y0 + 8 * static_cast<double>(k), hgt = b.stacked ? per - 6 : 7;
      const double from = f.px(b.stacked ? at : f.x_min), to = f.px(std::max(f.x_min, b.stacked ? at + v : v));
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", from, y, std::max(0.0, to - from), hgt,
                         b.series[k].color);
      if (b.stacked) at += v;
    }
  }
  return out + legend(f, keys) + "</svg>\n";
}

std::vector<const SessionReplay*> replays_of(const BenchResults& results, const std::string& session) {
  std::vector<const SessionReplay*> out;
  for (const auto& r : results.replays)
    if (r.session == session) out.push_back(&r);
  return out;
}

// A config's limit on the tokens chart. A chars or bytes limit is drawn where it lies in tokens
// at this session's tokens per char (or byte) over its calls: a request there holds about as many
// tokens as the line says.
std::optional<Level> limit_level(const BenchResults& results, const SessionReplay& r) {
  if (r.limit == 0 || results.is_baseline(r)) return std::nullopt;
  const std::string unit = r.limit_unit.empty() ? "tokens" : r.limit_unit;
  Level l{fmt::format("limit of {} ({} {})", results.config_name(r.config_index), grouped(r.limit), unit), color_of(results, r.config_index), {}};
  if (unit == "tokens") {
    l.y.push_back(static_cast<double>(r.limit));
    return l;
  }
  double tokens = 0, size = 0;
  for (const auto& c : r.calls)
    if (c.budget_size > 0) tokens += static_cast<double>(c.sent), size += static_cast<double>(c.budget_size);
  if (size == 0) return std::nullopt;
  l.y.push_back(static_cast<double>(r.limit) * tokens / size);
  l.name = fmt::format("limit of {} ({} {}, ~{} tokens here)", results.config_name(r.config_index), grouped(r.limit), unit,
                       tokens_label(std::round(l.y.front() / 100) * 100));
  return l;
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
    Series s{results.config_name(r->config_index), color_of(results, r->config_index), {}, results.is_baseline(*r)};
    for (const auto& c : r->calls) s.y.push_back(static_cast<double>(c.sent));
    series.push_back(std::move(s));
    window = std::max(window, r->window);
    if (auto l = limit_level(results, *r)) levels.push_back(std::move(*l));
  }
  if (window > 0) levels.push_back({fmt::format("the model's window ({} tokens)", grouped(window)), "black", {static_cast<double>(window)}});
  return line_chart("Tokens sent per call: " + session, "call", "tokens sent", series, levels, tokens_label);
}

std::string cumulative_cost_chart(const BenchResults& results) {
  std::vector<Series> series;
  for (std::size_t k = 0; k <= results.configs.size(); ++k) {
    Series s{results.config_name(k), color_of(results, k), {}, k == results.configs.size()};
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
  const char* const parts_names[] = {"cache read", "cache write", "uncached input", "output"};
  for (std::size_t p = 0; p < 4; ++p) b.series.push_back({parts_names[p], category_color(p), {}});
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
    b.category_colors.push_back(color_of(results, k));
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
  const char* const kinds[] = {"visible at the median call", "visible at the last call", "paths + errors visible at the last call", "recoverable"};
  for (std::size_t p = 0; p < 4; ++p) b.series.push_back({kinds[p], category_color(p), {}});
  double low = 100;
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
    b.category_colors.push_back(color_of(results, k));
    for (std::size_t s = 0; s < 4; ++s) {
      const double v = s == 0 ? pct(vm, pm) : s == 1 ? pct(vl, pl) : s == 2 ? pct(fv, f) : pct(rec, p);
      b.series[s].y.push_back(v);
      low = std::min(low, v);
    }
  }
  std::tie(b.x_min, b.x_max) = data_range(low, 100, 5, 0, 100);
  return bar_chart("What the model still has, per config", fmt::format("% of the session's probes (the axis starts at {:g}%)", b.x_min), b,
                   percent_label);
}

// Where each point's label goes: a column right of the plot, in the points' order from top to
// bottom, at least a line apart, each joined to its point by a thin line.
std::vector<double> label_rows(const std::vector<double>& ys, double top, double bottom) {
  std::vector<std::size_t> order(ys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ys[a] < ys[b]; });
  std::vector<double> rows(ys.size());
  double at = top;
  for (std::size_t i : order) at = rows[i] = std::max(at, ys[i] + 4), at += 14;
  // Past the bottom: the column moves up as a whole.
  const double over = at - 14 - bottom;
  if (over > 0)
    for (double& r : rows) r -= over;
  return rows;
}

}  // namespace

std::string frontier_chart(const std::string& title, const std::vector<FrontierPoint>& points, const std::vector<std::string>& colors,
                           bool label_all) {
  const std::vector<std::size_t> front = frontier(points);
  const auto on = [&](std::size_t i) { return std::find(front.begin(), front.end(), i) != front.end(); };
  std::vector<std::size_t> labelled;
  double longest = 0;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (label_all || on(i)) labelled.push_back(i), longest = std::max(longest, text_width(points[i].name, 11));
  const std::vector<Key> keys = {{"on the frontier (filled): no config costs no more with no less evidence", "black", true},
                                 {"dominated (hollow): another costs no more and keeps no less", "#999999", false}};
  Frame f;
  f.right = 40 + longest;
  f.w = std::max(900.0, 640 + f.right);
  f.bottom = 60 + legend_height(keys, f.w) + 20;
  f.h = std::max(460.0, f.top + f.bottom + 14 * static_cast<double>(labelled.size()) + 20);
  // Both axes over the range of the data: the points near 1x and 100% show apart.
  double lo_cost = 1e300, hi_cost = 0, lo_ev = 100, hi_ev = 0;
  for (const auto& p : points)
    lo_cost = std::min(lo_cost, p.cost), hi_cost = std::max(hi_cost, p.cost), lo_ev = std::min(lo_ev, p.evidence), hi_ev = std::max(hi_ev, p.evidence);
  if (points.empty()) lo_cost = 0, hi_cost = 1, hi_ev = 100;
  std::tie(f.x_min, f.x_max) = data_range(lo_cost, hi_cost, 0.05, 0, 1e300);
  std::tie(f.y_min, f.y_max) = data_range(lo_ev, hi_ev, 5, 0, 100);
  std::string out = svg_open(f, title) + axes(f, "cost with re-fetch, x uncompacted (on the same sessions)", "evidence visible",
                                              [](double v) { return fmt::format("{:g}x", std::round(v * 1000) / 1000); }, percent_label);
  if (front.size() > 1) {
    out += "<polyline fill=\"none\" stroke=\"black\" stroke-width=\"1\" stroke-dasharray=\"6 4\" points=\"";
    for (std::size_t i = 0; i < front.size(); ++i)
      out += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", f.px(points[front[i]].cost), f.py(points[front[i]].evidence));
    out += "\"/>\n";
  }
  std::vector<double> ys;
  for (std::size_t i : labelled) ys.push_back(f.py(points[i].evidence));
  const std::vector<double> rows = label_rows(ys, f.top + 4, f.h - f.bottom);
  const double label_x = f.w - f.right + 24;
  for (std::size_t j = 0; j < labelled.size(); ++j) {
    const FrontierPoint& p = points[labelled[j]];
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#bbbbbb\" stroke-width=\"0.7\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"{}\">{}</text>\n",
                       f.px(p.cost) + 6, f.py(p.evidence), label_x - 4, rows[j] - 4, label_x, rows[j], colors[labelled[j]], xml_escape(p.name));
  }
  for (std::size_t i = 0; i < points.size(); ++i)
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n", f.px(points[i].cost),
                       f.py(points[i].evidence), on(i) ? colors[i] : "white", colors[i]);
  return out + legend(f, keys) + "</svg>\n";
}

namespace {

std::string evidence_chart(const BenchResults& results) {
  const std::vector<FrontierPoint> points = frontier_points(results);
  std::vector<std::string> colors;
  for (const auto& p : points) colors.push_back(color_of(results, p.config_index));
  return frontier_chart("The frontier: evidence the agent used, still visible, against cost with re-fetch", points, colors, true);
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
