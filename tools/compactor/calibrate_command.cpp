// compactor calibrate --corpus DIR [--out F] [--report F] [--base KIND]
// Fits the calibrated meter to the prompt sizes Claude Code recorded, and measures every meter.
#include "command_line.hpp"
#include "commands.hpp"

#include "host/atomic_file.hpp"
#include "meter/calibration_fit.hpp"
#include "model/conversation_reader.hpp"
#include "host/exit_code.hpp"
#include "import/importers.hpp"
#include "meter/meter_kinds.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <array>
#include <map>
#include <unistd.h>
#include <set>
#include <unordered_map>

namespace compactor::cli {

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr const char* kHelp = R"(usage: compactor calibrate --corpus DIR [--out FILE] [--report FILE] [--base KIND]

Reads every Claude Code session log (*.jsonl) below DIR and, for every API call it recorded,
compares the prompt size the API reported (usage: input + cache read + cache creation tokens)
with what each meter counts for the messages before that call.

  - Usage is taken once per message.id; <synthetic> lines (no API call) are dropped.
  - A call is left out when a line before it was skipped as broken or repaired by the import,
    when it follows a compaction, or when its response does not start a message of the chain.
  - The fixed part of a prompt (system prompt and tools, not in the log) is each session's
    first call per model family: every later call is predicted as that call's reported size
    plus what the meter counts for the messages added since.
  - Sessions are split in two by the FNV-1a hash of their session id: even hashes fit, odd ones
    are held out. The calibrated meter is per model family (opus, sonnet, haiku, …):
      tokens(message) = per_token × BASE(message) + per_message,
    a robust fit over the fitting half, on the steps between a session's consecutive calls:
    Huber-reweighted least squares, then least squares on the steps within 3.5 robust standard
    deviations; the others (a step into context the log does not show) are outliers, counted
    and named by session. The report gives, on the
    held-out half, the median and 90th-percentile relative error of chars4, cl100k, o200k,
    claude-legacy and calibrated.

options:
  --corpus DIR    folder of Claude Code logs (searched recursively; agent-*.jsonl are sub-agent chains)
  --out FILE      write the fit (YAML) a config names as `meter: {kind: calibrated, file: FILE}`
  --report FILE   write the accuracy report (JSON)
  --base KIND     the exact meter the fit scales (default claude-legacy; or cl100k, o200k)

The report's last row, chars4-fit, is the same fit over chars/4: the baseline a fit without an
exact tokenizer reaches.

A fit whose held-out median error is worse than chars4-fit's (by over a quarter of it and 0.1
percentage point) is refused: the reason is printed,
the report says it, and --out is not written.

Prints the accuracy table. Exit codes: 0 done; 1 the fit was refused; 2 bad arguments, no usable
call, or a write failed.
)";

struct Call {
  std::size_t prefix = 0;    // messages before the call
  std::uint64_t prompt = 0;  // tokens the API reported
  std::string family;
};

struct Session {
  std::string file, id;
  bool held_out = false;
  std::vector<Call> calls;
  std::vector<std::vector<std::uint64_t>> prefix_tokens;  // [meter][n] = tokens of messages [0, n)
};

struct Counts {
  std::size_t files = 0, unreadable = 0, sessions = 0, calls = 0, synthetic = 0, after_skip = 0, after_compaction = 0,
              not_in_chain = 0, used = 0;
};

const std::vector<std::string> kMeters = {"chars4", "cl100k", "o200k", "claude-legacy"};

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

std::string family_of(std::string_view model) {
  for (const char* f : {"opus", "sonnet", "haiku"})
    if (model.find(f) != std::string_view::npos) return f;
  return std::string(model);
}

std::optional<Session> read_session(const fs::path& path, const std::vector<std::shared_ptr<const Meter>>& meters,
                                    Counts& counts) {
  auto bytes = read_input_bytes(path.string());
  if (!bytes) {
    fmt::print(stderr, "compactor calibrate: {} (skipped)\n", bytes.error().message);
    ++counts.unreadable;
    return std::nullopt;
  }
  bool sidechain = path.filename().string().rfind("agent-", 0) == 0;
  ImportResult imported = import_claude_code(*bytes, path.string(), sidechain);
  std::vector<RecordedCall> recorded;
  for (RecordedCall& r : imported.recorded_calls) {
    ++counts.calls;
    if (r.model == "<synthetic>")
      ++counts.synthetic;
    else
      recorded.push_back(std::move(r));
  }
  if (recorded.empty()) return std::nullopt;
  if (!imported.conversation) {
    counts.not_in_chain += recorded.size();
    return std::nullopt;
  }
  const Conversation& c = *imported.conversation;
  // The assistant message each recorded call's response starts, by its first line.
  std::unordered_map<std::size_t, std::size_t> message_at_line;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i].role() == Role::assistant) message_at_line.emplace(imported.message_lines[i], i);

  // The first line the import skipped as broken or repaired: calls after it saw another prompt.
  std::size_t first_bad = SIZE_MAX;
  for (std::size_t l : imported.report.broken_lines) first_bad = std::min(first_bad, l);
  for (const auto& r : imported.report.repairs)
    if (r.line > 0) first_bad = std::min(first_bad, r.line);

  Session s;
  s.file = path.string();
  s.id = imported.session_id.empty() ? path.stem().string() : imported.session_id;
  s.held_out = (fnv1a(s.id) & 1) != 0;
  for (const RecordedCall& r : recorded) {
    if (r.line > first_bad) {
      ++counts.after_skip;
      continue;
    }
    if (imported.compaction_line != 0 && r.line > imported.compaction_line) {
      ++counts.after_compaction;
      continue;
    }
    auto at = message_at_line.find(r.line);
    if (at == message_at_line.end() || at->second == 0) {
      ++counts.not_in_chain;
      continue;
    }
    s.calls.push_back({at->second, r.prompt_tokens, family_of(r.model)});
  }
  if (s.calls.empty()) return std::nullopt;
  for (const auto& meter : meters) {
    std::vector<std::uint64_t> prefix(c.size() + 1, 0);
    for (std::size_t i = 0; i < c.size(); ++i) prefix[i + 1] = prefix[i] + meter->tokens(c[i]);
    s.prefix_tokens.push_back(std::move(prefix));
  }
  return s;
}

// A call with its session's reference call (the first of its family).
struct Point {
  const Session* session;
  const Call* call;
  const Call* ref;
};

std::vector<Point> points_of(const std::vector<Session>& sessions, bool held_out) {
  std::vector<Point> out;
  for (const Session& s : sessions) {
    if (s.held_out != held_out) continue;
    std::map<std::string, const Call*> first;
    for (const Call& c : s.calls) {
      auto [it, inserted] = first.emplace(c.family, &c);
      if (!inserted) out.push_back({&s, &c, it->second});
    }
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double idx = p * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(idx));
  std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

// The fit's robust core for one family: Δprompt ≈ a·Δbase + b·Δmessages through the origin, over
// the steps between consecutive calls of a session (its first call carries the fixed overhead). Some calls break the assumption that the
// log's messages are what was sent (context the log does not show, a resumed session), so the
// fit is iteratively reweighted (Huber weights over a MAD scale), then refitted by least squares
// on the calls whose residual is within 3.5 robust standard deviations; the rest are outliers.
struct FamilyPoints {
  std::vector<double> x, n, y;
  std::vector<const Session*> session;
};

struct RobustFit {
  double a = 0, b = 0;
  bool ok = false;
  std::vector<bool> outlier;
};

RobustFit robust_fit(const FamilyPoints& p) {
  const std::size_t count = p.x.size();
  RobustFit fit;
  fit.outlier.assign(count, false);
  std::vector<double> w(count, 1.0), residual(count, 0.0);
  auto solve = [&]() {
    double xx = 0, xn = 0, nn = 0, xy = 0, ny = 0;
    for (std::size_t i = 0; i < count; ++i) {
      xx += w[i] * p.x[i] * p.x[i], xn += w[i] * p.x[i] * p.n[i], nn += w[i] * p.n[i] * p.n[i];
      xy += w[i] * p.x[i] * p.y[i], ny += w[i] * p.n[i] * p.y[i];
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
    for (std::size_t i = 0; i < count; ++i) residual[i] = p.y[i] - fit.a * p.x[i] - fit.b * p.n[i];
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

struct Outliers {
  std::size_t calls = 0;
  std::set<std::string> sessions;
};

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
    RobustFit r = robust_fit(points);
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

}  // namespace

int calibrate_command(int argc, char** argv) {
  const Command command{"calibrate", kHelp};
  int exit_code = kExitOk;
  auto args = command.parse(argc, argv, 2, {{"corpus"}, {"out"}, {"report"}, {"base"}}, exit_code);
  if (!args) return exit_code;
  std::string error;
  auto corpus = required_option(*args, "corpus", error);
  if (!corpus) return command.usage_error(error);
  std::vector<NamedPath> outputs;
  if (auto out = args->get("out")) outputs.push_back({"--out", *out});
  if (auto report = args->get("report")) outputs.push_back({"--report", *report});
  if (auto conflict = overwrite_conflict({}, outputs)) {
    fmt::print(stderr, "compactor calibrate: {}\n", *conflict);
    return kExitBadInput;
  }
  std::error_code ec;
  if (!fs::is_directory(*corpus, ec)) {
    fmt::print(stderr, "compactor calibrate: {}: not a folder\n", *corpus);
    return kExitBadInput;
  }
  std::string base = args->get("base").value_or("claude-legacy");
  auto base_index = std::find(kMeters.begin() + 1, kMeters.end(), base);
  if (base_index == kMeters.end()) {
    fmt::print(stderr, "compactor calibrate: --base {}: expected cl100k, o200k or claude-legacy\n", base);
    return kExitBadInput;
  }
  std::size_t b = static_cast<std::size_t>(base_index - kMeters.begin());
  std::vector<std::shared_ptr<const Meter>> meters;
  for (const std::string& kind : kMeters) {
    auto m = make_meter(MeterSpec{kind, "", ""});
    if (!m) {
      fmt::print(stderr, "compactor calibrate: {}\n", m.error().message);
      return kExitBadInput;
    }
    meters.push_back(std::move(*m));
  }

  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(*corpus, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".jsonl") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  Counts counts;
  std::vector<Session> sessions;
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (progress) fmt::print(stderr, "\rcalibrate: {}/{} {}\033[K", i + 1, files.size(), files[i].filename().string());
    ++counts.files;
    if (auto s = read_session(files[i], meters, counts)) sessions.push_back(std::move(*s));
  }
  if (progress) fmt::print(stderr, "\n");
  counts.sessions = sessions.size();

  // Fit per family: Δprompt ≈ a·Δbase + c·Δmessages, least squares through the origin.
  std::vector<Point> fit_points = points_of(sessions, false), test_points = points_of(sessions, true);
  std::map<std::string, Outliers> outliers;
  CalibrationFit fit = fit_over(fit_points, b, base, &outliers);
  if (fit.families.empty()) {
    fmt::print(stderr, "compactor calibrate: {}: no usable calls to fit (see --help for what is left out)\n", *corpus);
    return kExitBadInput;
  }
  CalibrationFit baseline = fit_over(fit_points, 0, "chars4");  // the same fit over chars/4
  // Held-out errors per meter.
  std::vector<std::string> names = kMeters;
  names.push_back("calibrated");
  names.push_back("chars4-fit");
  std::vector<std::vector<double>> errors(names.size());
  for (const Point& p : test_points) {
    double y = static_cast<double>(p.call->prompt);
    if (y <= 0) continue;
    for (std::size_t k = 0; k < kMeters.size(); ++k) {
      const auto& pre = p.session->prefix_tokens[k];
      double pred = static_cast<double>(p.ref->prompt) + static_cast<double>(pre[p.call->prefix]) - static_cast<double>(pre[p.ref->prefix]);
      errors[k].push_back(std::abs(pred - y) / y);
    }
    errors[kMeters.size()].push_back(std::abs(predict(fit, p, b) - y) / y);
    if (!baseline.families.empty()) errors[kMeters.size() + 1].push_back(std::abs(predict(baseline, p, 0) - y) / y);
  }
  counts.used = fit_points.size() + test_points.size();

  std::size_t held_sessions = std::count_if(sessions.begin(), sessions.end(), [](const Session& s) { return s.held_out; });
  fmt::print("calibrate {}: {} files{}, {} sessions with usable calls ({} fit, {} held out)\n", *corpus, counts.files,
             counts.unreadable ? fmt::format(" ({} unreadable)", counts.unreadable) : "", counts.sessions,
             counts.sessions - held_sessions, held_sessions);
  fmt::print("calls: {} recorded, {} <synthetic> dropped, {} after a skipped or repaired line, {} after a compaction, "
             "{} not starting a message of the chain; {} compared ({} fit, {} held out) besides each session's first\n",
             counts.calls, counts.synthetic, counts.after_skip, counts.after_compaction, counts.not_in_chain,
             counts.used, fit_points.size(), test_points.size());
  for (const auto& [family, f] : fit.families)
    fmt::print("fit {}: tokens = {:.4f} x {} + {:.2f} per message ({} calls, {} sessions; overhead median {} tokens)\n",
               family, f.per_token, base, f.per_message, f.calls, f.sessions, f.overhead_median);
  for (const auto& [family, o] : outliers) {
    std::string ids;
    for (const auto& id : o.sessions) ids += (ids.empty() ? "" : ", ") + id;
    fmt::print("outliers {}: {} fitting calls left out (residual over 3.5 robust SD), in {} session{}: {}\n", family, o.calls,
               o.sessions.size(), o.sessions.size() == 1 ? "" : "s", ids);
  }
  fmt::print("\nheld-out relative error of the predicted prompt tokens ({} calls):\n", test_points.size());
  fmt::print("  {:<14} {:>8} {:>8}\n", "meter", "median", "p90");
  json::array rows;
  for (std::size_t k = 0; k < names.size(); ++k) {
    double med = percentile(errors[k], 0.5), p90 = percentile(errors[k], 0.9);
    fmt::print("  {:<14} {:>7.2f}% {:>7.2f}%\n", names[k], 100 * med, 100 * p90);
    rows.push_back(json::object{{"meter", names[k]}, {"median", med}, {"p90", p90}, {"calls", errors[k].size()}});
  }

  // A fit that predicts worse than the same fit over chars/4 is not to be trusted: refuse it.
  const double calibrated_median = percentile(errors[kMeters.size()], 0.5);
  const double baseline_median = percentile(errors[kMeters.size() + 1], 0.5);
  std::string refusal;
  // Materially worse (by a quarter, and by 0.1 point): two near-perfect fits are not told apart.
  if (!errors[kMeters.size() + 1].empty() && calibrated_median > 1.25 * baseline_median + 0.001)
    refusal = fmt::format("the calibrated fit's held-out median error ({:.2f}%) is worse than the chars/4 fit's ({:.2f}%): "
                          "the log's messages do not explain its prompt sizes well enough to trust a fit over {}",
                          100 * calibrated_median, 100 * baseline_median, base);
  if (!refusal.empty()) fmt::print(stderr, "compactor calibrate: refused: {}{}\n", refusal, args->get("out") ? "; no fit written" : "");

  if (auto out = args->get("out"); out && refusal.empty()) {
    auto w = write_file_atomically(*out, fit.to_yaml("written by compactor calibrate --corpus " + *corpus + " (fitting half)"));
    if (!w) {
      fmt::print(stderr, "compactor calibrate: {}\n", w.error().message);
      return kExitBadInput;
    }
  }
  if (auto report = args->get("report")) {
    json::object families;
    for (const auto& [family, f] : fit.families)
      families[family] = json::object{{"per_token", f.per_token}, {"per_message", f.per_message}, {"calls", f.calls},
                                      {"sessions", f.sessions}, {"overhead_median", f.overhead_median}};
    json::object outliers_json;
    for (const auto& [family, o] : outliers) {
      json::array ids;
      for (const auto& id : o.sessions) ids.push_back(json::string(id));
      outliers_json[family] = json::object{{"calls", o.calls}, {"sessions", ids}};
    }
    json::object r{{"schema_version", 1},
                   {"corpus", *corpus},
                   {"base", base},
                   {"split", "FNV-1a 64 of the session id: even fits, odd is held out"},
                   {"files", counts.files},
                   {"unreadable_files", counts.unreadable},
                   {"sessions", counts.sessions},
                   {"held_out_sessions", held_sessions},
                   {"calls", json::object{{"recorded", counts.calls}, {"synthetic_dropped", counts.synthetic},
                                          {"after_skipped_or_repaired_line", counts.after_skip},
                                          {"after_compaction", counts.after_compaction},
                                          {"not_starting_a_message", counts.not_in_chain},
                                          {"fit", fit_points.size()}, {"held_out", test_points.size()}}},
                   {"fit", families},
                   {"outliers", outliers_json},
                   {"held_out_error", rows},
                   {"refused", refusal.empty() ? json::value(nullptr) : json::value(refusal)}};
    auto w = write_file_atomically(*report, json::serialize(r) + "\n");
    if (!w) {
      fmt::print(stderr, "compactor calibrate: {}\n", w.error().message);
      return kExitBadInput;
    }
  }
  return refusal.empty() ? kExitOk : kExitNotDone;
}

}  // namespace compactor::cli
