#include "calibrate/calibration.hpp"

#include "platform/percentile.hpp"

#include "meter/meter_kinds.hpp"
#include "meter/robust_fit.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

namespace compactor::calibrate {

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// One family's steps for the robust fit (meter/robust_fit.hpp): Δprompt ≈ a·Δbase + b·Δmessages
// between consecutive calls of a session (its first call carries the fixed overhead), with the
// session of each step to name its outliers.
struct FamilyPoints {
  std::vector<double> x, n, y;
  std::vector<const Session*> session;
};

// The fit over the meter `b` (an index in compared_meters()) per family, with each family's
// overhead; the outliers by family when asked for.
CalibrationFit fit_over(const std::vector<Point>& fit_points, std::size_t b, const std::string& base,
                        std::map<std::string, Outliers>* outliers = nullptr) {
  CalibrationFit fit;
  fit.base = base;
  std::map<std::string, FamilyPoints> by_family;
  std::map<std::string, std::set<const Session*>> fit_sessions;
  // Each call against the session's previous call of its family: context the log does not show
  // then makes one step an outlier, not every call after it.
  std::map<std::pair<const Session*, std::string>, const Call*> previous;
  for (const Point& p : fit_points) {
    const Call*& prev = previous[{p.session, p.call->family}];
    const Call* from = prev != nullptr ? prev : p.ref;
    prev = p.call;
    const auto& pre = p.session->prefix_tokens[b];
    FamilyPoints& f = by_family[p.call->family];
    f.x.push_back(static_cast<double>(pre[p.call->prefix]) - static_cast<double>(pre[from->prefix]));
    f.n.push_back(static_cast<double>(p.call->prefix) - static_cast<double>(from->prefix));
    f.y.push_back(static_cast<double>(p.call->prompt) - static_cast<double>(from->prompt));
    f.session.push_back(p.session);
    fit_sessions[p.call->family].insert(p.session);
  }
  for (const auto& [family, points] : by_family) {
    RobustFit r = robust_fit(points.x, points.n, points.y);
    if (!r.ok || !(r.a > 0 && r.a < 100)) continue;  // too few points to say anything
    FamilyFit f;
    f.per_token = r.a;
    f.per_message = r.b;
    for (std::size_t i = 0; i < points.x.size(); ++i) {
      if (!r.outlier[i]) {
        ++f.calls;
      } else if (outliers != nullptr) {
        ++(*outliers)[family].calls;
        (*outliers)[family].sessions.insert(points.session[i]->id);
      }
    }
    f.sessions = fit_sessions[family].size();
    fit.families[family] = f;
  }
  if (fit.families.empty()) return fit;
  for (const auto& [family, f] : fit.families)
    if (fit.default_family.empty() || f.calls > fit.families[fit.default_family].calls) fit.default_family = family;
  // Overhead: each fitting session's first call less what the calibrated meter counts before it.
  for (auto& [family, f] : fit.families) {
    std::vector<double> overheads;
    for (const Session* s : fit_sessions[family])
      for (const Call& c : s->calls)
        if (c.family == family) {
          double counted = f.per_token * static_cast<double>(s->prefix_tokens[b][c.prefix]) + f.per_message * static_cast<double>(c.prefix);
          overheads.push_back(std::max(0.0, static_cast<double>(c.prompt) - counted));
          break;
        }
    f.overhead_median = static_cast<std::uint64_t>(std::llround(percentile(overheads, 0.5)));
  }

  return fit;
}

// A held-out call's predicted prompt: its reference call's reported size plus the fitted growth.
double predict(const CalibrationFit& fit, const Point& p, std::size_t b) {
  auto it = fit.families.find(p.call->family);
  const FamilyFit& f = it != fit.families.end() ? it->second : fit.families.at(fit.default_family);
  const auto& pre = p.session->prefix_tokens[b];
  return static_cast<double>(p.ref->prompt) +
         f.per_token * (static_cast<double>(pre[p.call->prefix]) - static_cast<double>(pre[p.ref->prefix])) +
         f.per_message * (static_cast<double>(p.call->prefix) - static_cast<double>(p.ref->prefix));
}

// Each meter's error on the held-out calls: an exact meter predicts a call as its reference
// call's reported size plus what it counts for the messages added since; the fits add their
// per-token and per-message growth.
std::vector<HeldOutError> held_out_errors(const std::vector<Point>& test_points, const CalibrationFit& fit,
                                          const CalibrationFit& baseline, std::size_t b) {
  const std::vector<std::string>& meters = compared_meters();
  std::vector<std::string> names = meters;
  names.push_back("calibrated");
  names.push_back("chars4-fit");
  std::vector<std::vector<double>> errors(names.size());
  for (const Point& p : test_points) {
    double y = static_cast<double>(p.call->prompt);
    if (y <= 0) continue;
    for (std::size_t k = 0; k < meters.size(); ++k) {
      const auto& pre = p.session->prefix_tokens[k];
      double pred = static_cast<double>(p.ref->prompt) + static_cast<double>(pre[p.call->prefix]) - static_cast<double>(pre[p.ref->prefix]);
      errors[k].push_back(std::abs(pred - y) / y);
    }
    errors[meters.size()].push_back(std::abs(predict(fit, p, b) - y) / y);
    if (!baseline.families.empty()) errors[meters.size() + 1].push_back(std::abs(predict(baseline, p, 0) - y) / y);
  }
  std::vector<HeldOutError> rows;
  for (std::size_t k = 0; k < names.size(); ++k)
    rows.push_back({names[k], percentile(errors[k], 0.5), percentile(errors[k], 0.9), errors[k].size()});
  return rows;
}

// A fit that predicts worse than the same fit over chars/4 is not to be trusted: why, or empty.
std::string refusal_of(const std::vector<HeldOutError>& errors, const std::string& base) {
  const HeldOutError& calibrated = errors[errors.size() - 2];
  const HeldOutError& baseline = errors[errors.size() - 1];
  // Materially worse (by a quarter, and by 0.1 point): two near-perfect fits are not told apart.
  if (baseline.calls != 0 && calibrated.median > 1.25 * baseline.median + 0.001)
    return fmt::format("the calibrated fit's held-out median error ({:.2f}%) is worse than the chars/4 fit's ({:.2f}%): "
                       "the log's messages do not explain its prompt sizes well enough to trust a fit over {}",
                       100 * calibrated.median, 100 * baseline.median, base);
  return "";
}

}  // namespace

Expected<Calibration> calibrate_corpus(const std::string& corpus, const std::string& base) {
  std::error_code ec;
  if (!fs::is_directory(corpus, ec)) return Error{corpus + ": not a folder"};
  const std::vector<std::string>& kinds = compared_meters();
  auto base_index = std::find(kinds.begin() + 1, kinds.end(), base);
  if (base_index == kinds.end()) return Error{"--base " + base + ": expected cl100k, o200k or claude-legacy"};
  const std::size_t b = static_cast<std::size_t>(base_index - kinds.begin());
  std::vector<std::shared_ptr<const Meter>> meters;
  for (const std::string& kind : kinds) {
    auto m = make_meter(MeterSpec{kind, "", ""});
    if (!m) return m.error();
    meters.push_back(std::move(*m));
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(corpus, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".jsonl") files.push_back(it->path());
  std::sort(files.begin(), files.end());

  Calibration c;
  c.corpus = corpus;
  c.base = base;
  const std::vector<Session> sessions = read_recorded_calls(files, meters, c.counts);
  // Fit per family on the fitting half (Δprompt ≈ a·Δbase + b·Δmessages), measure on the other.
  std::vector<Point> fit_points = points_of(sessions, false), test_points = points_of(sessions, true);
  c.fit = fit_over(fit_points, b, base, &c.outliers);
  if (c.fit.families.empty()) return Error{corpus + ": no usable calls to fit (see --help for what is left out)"};
  const CalibrationFit baseline = fit_over(fit_points, 0, "chars4");  // the same fit over chars/4
  c.errors = held_out_errors(test_points, c.fit, baseline, b);
  c.counts.used = fit_points.size() + test_points.size();
  c.fit_calls = fit_points.size();
  c.held_out_calls = test_points.size();
  c.held_out_sessions = static_cast<std::size_t>(std::count_if(sessions.begin(), sessions.end(), [](const Session& s) { return s.held_out; }));
  c.refusal = refusal_of(c.errors, base);
  return c;
}

std::string summary_text(const Calibration& c) {
  const CallCounts& counts = c.counts;
  std::string out = fmt::format("calibrate {}: {} files{}, {} sessions with usable calls ({} fit, {} held out)\n", c.corpus,
                                counts.files, counts.unreadable ? fmt::format(" ({} unreadable)", counts.unreadable) : "",
                                counts.sessions, counts.sessions - c.held_out_sessions, c.held_out_sessions);
  out += fmt::format("calls: {} recorded, {} <synthetic> dropped, {} after a skipped or repaired line, {} after a compaction, "
                     "{} not starting a message of the chain; {} compared ({} fit, {} held out) besides each session's first\n",
                     counts.calls, counts.synthetic, counts.after_skip, counts.after_compaction, counts.not_in_chain,
                     counts.used, c.fit_calls, c.held_out_calls);
  for (const auto& [family, f] : c.fit.families)
    out += fmt::format("fit {}: tokens = {:.4f} x {} + {:.2f} per message ({} calls, {} sessions; overhead median {} tokens)\n",
                       family, f.per_token, c.base, f.per_message, f.calls, f.sessions, f.overhead_median);
  for (const auto& [family, o] : c.outliers) {
    std::string ids;
    for (const auto& id : o.sessions) ids += (ids.empty() ? "" : ", ") + id;
    out += fmt::format("outliers {}: {} fitting calls left out (residual over 3.5 robust SD), in {} session{}: {}\n", family,
                       o.calls, o.sessions.size(), o.sessions.size() == 1 ? "" : "s", ids);
  }
  out += fmt::format("\nheld-out relative error of the predicted prompt tokens ({} calls):\n", c.held_out_calls);
  out += fmt::format("  {:<14} {:>8} {:>8}\n", "meter", "median", "p90");
  for (const HeldOutError& e : c.errors) out += fmt::format("  {:<14} {:>7.2f}% {:>7.2f}%\n", e.meter, 100 * e.median, 100 * e.p90);
  return out;
}

std::string report_json(const Calibration& c) {
  const CallCounts& counts = c.counts;
  json::object families;
  for (const auto& [family, f] : c.fit.families)
    families[family] = json::object{{"per_token", f.per_token}, {"per_message", f.per_message}, {"calls", f.calls},
                                    {"sessions", f.sessions}, {"overhead_median", f.overhead_median}};
  json::object outliers;
  for (const auto& [family, o] : c.outliers) {
    json::array ids;
    for (const auto& id : o.sessions) ids.push_back(json::string(id));
    outliers[family] = json::object{{"calls", o.calls}, {"sessions", ids}};
  }
  json::array rows;
  for (const HeldOutError& e : c.errors)
    rows.push_back(json::object{{"meter", e.meter}, {"median", e.median}, {"p90", e.p90}, {"calls", e.calls}});
  json::object r{{"schema_version", 1},
                 {"corpus", c.corpus},
                 {"base", c.base},
                 {"split", "FNV-1a 64 of the session id: even fits, odd is held out"},
                 {"files", counts.files},
                 {"unreadable_files", counts.unreadable},
                 {"sessions", counts.sessions},
                 {"held_out_sessions", c.held_out_sessions},
                 {"calls", json::object{{"recorded", counts.calls}, {"synthetic_dropped", counts.synthetic},
                                        {"after_skipped_or_repaired_line", counts.after_skip},
                                        {"after_compaction", counts.after_compaction},
                                        {"not_starting_a_message", counts.not_in_chain},
                                        {"fit", c.fit_calls}, {"held_out", c.held_out_calls}}},
                 {"fit", families},
                 {"outliers", outliers},
                 {"held_out_error", rows},
                 {"refused", c.refusal.empty() ? json::value(nullptr) : json::value(c.refusal)}};
  return json::serialize(r) + "\n";
}

}  // namespace compactor::calibrate
