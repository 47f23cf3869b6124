#include "bench/output.hpp"

#include "platform/percentile.hpp"

#include "bench/charts.hpp"
#include "bench/html_report.hpp"
#include "bench/png_render.hpp"
#include "bench/sweep_report.hpp"
#include "host/atomic_file.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace compactor::bench {

namespace json = boost::json;

namespace {

json::object retention_json(const Retention& r) {
  json::array lost;
  for (const auto& p : r.lost) lost.emplace_back(p);
  return {{"call", r.call},       {"probes", r.probes}, {"visible", r.visible}, {"recoverable", r.recoverable},
          {"facts", r.facts},     {"facts_visible", r.facts_visible}, {"lost", lost}};
}

std::uint64_t u64(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v->get_int64()));
  return 0;
}

std::string str(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

const json::array& arr(const json::object& o, std::string_view key) {
  static const json::array empty;
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? v->get_array() : empty;
}

Retention retention_from(const json::object& o) {
  Retention r;
  r.call = u64(o, "call");
  r.probes = u64(o, "probes");
  r.visible = u64(o, "visible");
  r.recoverable = u64(o, "recoverable");
  r.facts = u64(o, "facts");
  r.facts_visible = u64(o, "facts_visible");
  for (const auto& p : arr(o, "lost"))
    if (p.is_string()) r.lost.emplace_back(p.get_string());
  return r;
}

json::object evidence_json(const Evidence& e) {
  json::array misses;
  for (const auto& m : e.misses) misses.push_back(json::object{{"call", m.call}, {"line", m.line}, {"from", m.from}});
  return {{"calls", e.calls},
          {"probes", e.probes},
          {"visible", e.visible},
          {"refetches", e.refetches},
          {"refetch_tokens", json::object{{"cache_read", e.refetch_read}, {"cache_write", e.refetch_write}, {"output", e.refetch_output}}},
          {"refetch_nusd", e.refetch_nusd},
          {"misses", std::move(misses)}};
}

Evidence evidence_from(const json::object& o) {
  Evidence e;
  e.calls = u64(o, "calls");
  e.probes = u64(o, "probes");
  e.visible = u64(o, "visible");
  e.refetches = u64(o, "refetches");
  if (const auto* t = o.if_contains("refetch_tokens"); t != nullptr && t->is_object()) {
    e.refetch_read = u64(t->get_object(), "cache_read");
    e.refetch_write = u64(t->get_object(), "cache_write");
    e.refetch_output = u64(t->get_object(), "output");
  }
  e.refetch_nusd = u64(o, "refetch_nusd");
  for (const auto& m : arr(o, "misses"))
    if (m.is_object()) e.misses.push_back({u64(m.get_object(), "call"), str(m.get_object(), "line"), str(m.get_object(), "from")});
  return e;
}

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 100.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Pipeline wall times in µs, as ms.
double percentile_ms(const std::vector<std::int64_t>& us, double p) {
  return percentile(std::vector<double>(us.begin(), us.end()), p) / 1000.0;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

Expected<std::vector<std::string>> read_lines(const std::string& path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!required) return std::vector<std::string>{};
    return Error{path + ": cannot read"};
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace

std::string to_json_line(const SessionReplay& r) {
  json::array messages, sent, cached_messages, cache_read, cache_write, output, compacted, refused, stages, errors, budget_size;
  for (const auto& c : r.calls) {
    messages.emplace_back(c.messages);
    sent.emplace_back(c.sent);
    cached_messages.emplace_back(c.cached_messages);
    cache_read.emplace_back(c.cache_read);
    cache_write.emplace_back(c.cache_write);
    output.emplace_back(c.output);
    compacted.emplace_back(c.compacted);
    refused.emplace_back(c.refused);
    stages.emplace_back(c.stages);
    budget_size.emplace_back(c.budget_size);
  }
  for (const auto& e : r.errors) errors.emplace_back(e);
  json::object o{{"session", r.session},
                 {"source", r.source},
                 {"config", r.config},
                 {"config_index", r.config_index},
                 {"model", r.model},
                 {"meter", r.meter},
                 {"calls", r.calls.size()},
                 {"compactions", r.compactions},
                 {"declines", r.declines},
                 {"window", r.window},
                 {"limit", r.limit},
                 {"limit_unit", r.limit_unit},
                 {"refusals", r.refusals},
                 {"over_window", r.over_window},
                 {"over_budget", r.over_budget},
                 {"over_budget_tail", r.over_budget_tail},
                 {"summaries", r.summaries},
                 {"rejections", r.rejections},
                 {"failures", r.failures},
                 {"tokens_sent", r.sent},
                 {"cache_read", r.cache_read},
                 {"cache_write", r.cache_write},
                 {"uncached", r.uncached},
                 {"output", r.output},
                 {"cost_nusd", r.cost_nusd},
                 {"cost_split_nusd", json::object{{"cache_read", r.read_nusd},
                                                  {"cache_write", r.write_nusd},
                                                  {"uncached", r.uncached_nusd},
                                                  {"output", r.output_nusd}}},
                 {"summarizer", json::object{{"calls", r.summarizer_calls},
                                             {"input", r.summarizer_input},
                                             {"output", r.summarizer_output},
                                             {"cost_nusd", r.summarizer_cost_nusd}}},
                 {"retention", json::object{{"median", retention_json(r.median)}, {"last", retention_json(r.last)}}},
                 {"evidence", evidence_json(r.evidence)},
                 {"errors", errors},
                 {"per_call", json::object{{"messages", messages},
                                           {"sent", sent},
                                           {"cached_messages", cached_messages},
                                           {"cache_read", cache_read},
                                           {"cache_write", cache_write},
                                           {"output", output},
                                           {"compacted", compacted},
                                           {"refused", refused},
                                           {"stages", stages}}}};
  // A chars or bytes budget's size per call (the charts' limit line in tokens).
  if (!r.limit_unit.empty() && r.limit_unit != "tokens") o["per_call"].as_object()["budget_size"] = std::move(budget_size);
  return json::serialize(o);
}

std::string to_timings_line(const SessionReplay& r) {
  json::array us;
  std::vector<std::int64_t> times;
  for (const auto& c : r.calls) {
    us.emplace_back(c.pipeline_us);
    times.push_back(c.pipeline_us);
  }
  return json::serialize(json::object{{"session", r.session},
                                      {"config_index", r.config_index},
                                      {"p50_ms", percentile_ms(times, 0.5)},
                                      {"p99_ms", percentile_ms(times, 0.99)},
                                      {"pipeline_us", us}});
}

Expected<SessionReplay> replay_from_json_line(std::string_view line, const std::string& where) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return Error{where + ": not a JSON object: " + (ec ? ec.message() : "other value")};
  const json::object& o = v.get_object();
  SessionReplay r;
  r.session = str(o, "session");
  r.source = str(o, "source");
  r.config = str(o, "config");
  r.config_index = u64(o, "config_index");
  r.model = str(o, "model");
  r.meter = str(o, "meter");
  r.compactions = u64(o, "compactions");
  r.declines = u64(o, "declines");
  r.window = u64(o, "window");
  r.limit = u64(o, "limit");
  r.limit_unit = str(o, "limit_unit");
  r.refusals = u64(o, "refusals");
  r.over_window = u64(o, "over_window");
  r.over_budget = u64(o, "over_budget");
  r.over_budget_tail = u64(o, "over_budget_tail");
  r.summaries = u64(o, "summaries");
  r.rejections = u64(o, "rejections");
  r.failures = u64(o, "failures");
  r.sent = u64(o, "tokens_sent");
  r.cache_read = u64(o, "cache_read");
  r.cache_write = u64(o, "cache_write");
  r.uncached = u64(o, "uncached");
  r.output = u64(o, "output");
  r.cost_nusd = u64(o, "cost_nusd");
  if (const auto* split = o.if_contains("cost_split_nusd"); split != nullptr && split->is_object()) {
    r.read_nusd = u64(split->get_object(), "cache_read");
    r.write_nusd = u64(split->get_object(), "cache_write");
    r.uncached_nusd = u64(split->get_object(), "uncached");
    r.output_nusd = u64(split->get_object(), "output");
  }
  if (const auto* sm = o.if_contains("summarizer"); sm != nullptr && sm->is_object()) {
    const json::object& so = sm->get_object();
    r.summarizer_calls = u64(so, "calls");
    r.summarizer_input = u64(so, "input");
    r.summarizer_output = u64(so, "output");
    r.summarizer_cost_nusd = u64(so, "cost_nusd");
  }
  if (const auto* ret = o.if_contains("retention"); ret != nullptr && ret->is_object()) {
    if (const auto* m = ret->get_object().if_contains("median"); m != nullptr && m->is_object()) r.median = retention_from(m->get_object());
    if (const auto* l = ret->get_object().if_contains("last"); l != nullptr && l->is_object()) r.last = retention_from(l->get_object());
  }
  if (const auto* e = o.if_contains("evidence"); e != nullptr && e->is_object()) r.evidence = evidence_from(e->get_object());
  for (const auto& e : arr(o, "errors"))
    if (e.is_string()) r.errors.emplace_back(e.get_string());
  const auto* pc = o.if_contains("per_call");
  if (r.session.empty() || pc == nullptr || !pc->is_object()) return Error{where + ": not a bench line (no session or per_call)"};
  const json::object& p = pc->get_object();
  std::size_t n = u64(o, "calls");
  r.calls.resize(n);
  auto fill = [&](std::string_view key, auto setter) -> bool {
    const json::array& a = arr(p, key);
    if (a.size() != n) return false;
    for (std::size_t i = 0; i < n; ++i) setter(r.calls[i], a[i]);
    return true;
  };
  auto num = [](const json::value& e) -> std::uint64_t { return e.is_uint64() ? e.get_uint64() : e.is_int64() ? static_cast<std::uint64_t>(e.get_int64()) : 0; };
  bool ok = fill("messages", [&](CallRecord& c, const json::value& e) { c.messages = num(e); }) &&
            fill("sent", [&](CallRecord& c, const json::value& e) { c.sent = num(e); }) &&
            fill("cached_messages", [&](CallRecord& c, const json::value& e) { c.cached_messages = num(e); }) &&
            fill("cache_read", [&](CallRecord& c, const json::value& e) { c.cache_read = num(e); }) &&
            fill("cache_write", [&](CallRecord& c, const json::value& e) { c.cache_write = num(e); }) &&
            fill("output", [&](CallRecord& c, const json::value& e) { c.output = num(e); }) &&
            fill("compacted", [&](CallRecord& c, const json::value& e) { c.compacted = e.is_bool() && e.get_bool(); }) &&
            fill("refused", [&](CallRecord& c, const json::value& e) { c.refused = e.is_bool() && e.get_bool(); }) &&
            fill("stages", [&](CallRecord& c, const json::value& e) { c.stages = e.is_string() ? std::string(e.get_string()) : ""; });
  if (p.contains("budget_size"))
    ok = ok && fill("budget_size", [&](CallRecord& c, const json::value& e) { c.budget_size = num(e); });
  if (!ok) return Error{where + ": per_call arrays do not have " + std::to_string(n) + " entries each"};
  return r;
}

Expected<bool> apply_timings_line(std::string_view line, const ReplayIndex& index, const std::string& where) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return Error{where + ": not a JSON object"};
  const json::object& o = v.get_object();
  std::string session = str(o, "session");
  std::uint64_t config = u64(o, "config_index");
  auto it = index.find({session, config});
  if (it == index.end())
    return Error{where + ": timings for " + session + " config " + std::to_string(config) + " that no session line has"};
  const json::array& us = arr(o, "pipeline_us");
  auto& calls = it->second->calls;
  for (std::size_t i = 0; i < std::min(us.size(), calls.size()); ++i)
    calls[i].pipeline_us = us[i].is_int64() ? us[i].get_int64() : static_cast<std::int64_t>(us[i].is_uint64() ? us[i].get_uint64() : 0);
  return true;
}

namespace {

// One row's sums over its replays.
struct RowSums {
  std::set<std::string> meters;
  std::uint64_t sessions = 0, calls = 0, compactions = 0, declines = 0, refusals = 0, over = 0, over_tail = 0, summaries = 0;
  std::uint64_t sent = 0, read = 0, facts = 0, facts_visible = 0;
  std::uint64_t probes_m = 0, visible_m = 0, probes_l = 0, visible_l = 0, recoverable = 0, probes = 0, lost = 0, failed = 0;
  std::uint64_t cost = 0, summarizer_cost = 0, read_cost = 0, write_cost = 0, uncached_cost = 0, output_cost = 0;  // nano-USD
  std::uint64_t baseline_cost = 0, dearer = 0;  // of the same sessions, uncompacted; sessions dearer than it
  std::uint64_t evidence = 0, evidence_visible = 0, misses = 0, refetch_cost = 0, baseline_with_refetch = 0;
  std::vector<std::int64_t> us;

  void add(const SessionReplay& r, const SessionReplay* baseline) {
    meters.insert(r.meter);
    ++sessions;
    calls += r.calls.size();
    compactions += r.compactions;
    declines += r.declines;
    refusals += r.refusals;
    over += r.over_budget;
    over_tail += r.over_budget_tail;
    facts += r.last.facts;
    facts_visible += r.last.facts_visible;
    summaries += r.summaries;
    sent += r.sent;
    read += r.cache_read;
    cost += r.cost_nusd;
    read_cost += r.read_nusd;
    write_cost += r.write_nusd;
    uncached_cost += r.uncached_nusd;
    output_cost += r.output_nusd;
    summarizer_cost += r.summarizer_cost_nusd;
    probes_m += r.median.probes;
    visible_m += r.median.visible;
    probes_l += r.last.probes;
    visible_l += r.last.visible;
    probes += r.median.probes + r.last.probes;
    recoverable += r.median.recoverable + r.last.recoverable;
    lost += r.median.lost.size() + r.last.lost.size();
    failed += r.failures + r.rejections;
    evidence += r.evidence.probes;
    evidence_visible += r.evidence.visible;
    misses += r.evidence.probes - r.evidence.visible;
    refetch_cost += r.evidence.refetch_nusd;
    for (const auto& c : r.calls) us.push_back(c.pipeline_us);
    if (baseline != nullptr) {
      baseline_cost += baseline->cost_nusd;
      baseline_with_refetch += baseline->cost_with_refetch_nusd();
      dearer += r.cost_with_refetch_nusd() > baseline->cost_with_refetch_nusd();
    }
  }
  std::string meter_list() const {
    std::string out;
    for (const auto& m : meters) out += (out.empty() ? "" : ", ") + m;
    return out;
  }
  // "-12.3%" against the baseline of the same sessions ("—" for the baseline itself).
  std::string versus(bool baseline) const {
    if (baseline || baseline_cost == 0) return "—";
    return fmt::format("{:+.1f}%", 100.0 * (static_cast<double>(cost) - static_cast<double>(baseline_cost)) / static_cast<double>(baseline_cost));
  }
  // The same with the re-fetch charge on both sides.
  std::string versus_with_refetch(bool baseline) const {
    if (baseline || baseline_with_refetch == 0) return "—";
    const double with = static_cast<double>(cost + refetch_cost), base = static_cast<double>(baseline_with_refetch);
    return fmt::format("{:+.1f}%", 100.0 * (with - base) / base);
  }
};

// The sums of each config (and the baseline, last) over the replays `keep` accepts.
template <typename Keep>
std::vector<RowSums> row_sums(const BenchResults& results, Keep keep) {
  std::map<std::string, const SessionReplay*> baseline;
  for (const auto& r : results.replays)
    if (results.is_baseline(r)) baseline[r.session] = &r;
  std::vector<RowSums> rows(results.configs.size() + 1);
  for (const auto& r : results.replays) {
    if (r.config_index >= rows.size() || !keep(r)) continue;
    auto b = baseline.find(r.session);
    rows[r.config_index].add(r, results.is_baseline(r) || b == baseline.end() ? nullptr : b->second);
  }
  return rows;
}

std::string main_table(const BenchResults& results) {
  std::string out =
      "| config | meter | sessions | calls | compactions | declined (cost) | refusals | over budget | tail alone over | summaries | tokens sent | "
      "cache read | cost USD | vs uncompacted | dearer sessions | summarizer USD | visible (median call) | visible (last call) | "
      "paths + errors visible (last call) | recoverable | lost | failed calls | evidence visible | evidence missed | re-fetch USD | "
      "cost with re-fetch USD | with re-fetch vs uncompacted | pipeline p50 ms | p99 ms |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
      "---:|\n";
  const std::vector<RowSums> rows = row_sums(results, [](const SessionReplay&) { return true; });
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const RowSums& w = rows[k];
    if (w.sessions == 0) continue;
    const bool base = k == results.configs.size();
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f}% | {:.4f} | {} | {} | {:.4f} | {:.1f}% | {:.1f}% | {:.1f}% | {:.1f}% | {} | {} | "
        "{:.1f}% | {} | {:.4f} | {:.4f} | {} | {} | {} |\n",
        results.config_name(k), w.meter_list(), w.sessions, w.calls, w.compactions, w.declines, w.refusals, w.over, w.over_tail,
        w.summaries, w.sent, percent(w.read, w.sent), to_usd(w.cost), w.versus(base), base ? std::string("—") : std::to_string(w.dearer),
        to_usd(w.summarizer_cost), percent(w.visible_m, w.probes_m), percent(w.visible_l, w.probes_l), percent(w.facts_visible, w.facts),
        percent(w.recoverable, w.probes), w.lost, w.failed, percent(w.evidence_visible, w.evidence), w.misses, to_usd(w.refetch_cost),
        to_usd(w.cost + w.refetch_cost), w.versus_with_refetch(base), base ? std::string("—") : fmt::format("{:.2f}", percentile_ms(w.us, 0.5)),
        base ? std::string("—") : fmt::format("{:.2f}", percentile_ms(w.us, 0.99)));
  }
  return out;
}

// What each row paid for: cache reads, cache writes, uncached input and output.
std::string cost_split_table(const BenchResults& results) {
  std::string out =
      "| config | cost USD | cache read USD | cache write USD | uncached input USD | output USD | summarizer USD | vs uncompacted |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  const std::vector<RowSums> rows = row_sums(results, [](const SessionReplay&) { return true; });
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const RowSums& w = rows[k];
    if (w.sessions == 0) continue;
    out += fmt::format("| {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {} |\n", results.config_name(k), to_usd(w.cost),
                       to_usd(w.read_cost), to_usd(w.write_cost), to_usd(w.uncached_cost), to_usd(w.output_cost), to_usd(w.summarizer_cost),
                       w.versus(k == results.configs.size()));
  }
  return out;
}

// Cost and retention against the baseline per source format (Claude Code, Codex, Gemini CLI, OpenAI…).
std::string by_source_table(const BenchResults& results) {
  std::set<std::string> sources;
  for (const auto& r : results.replays) sources.insert(r.source.empty() ? std::string("?") : r.source);
  std::string out =
      "| source | config | sessions | calls | compactions | cost USD | vs uncompacted | dearer sessions | paths + errors visible (last call) | "
      "visible (last call) | evidence visible | with re-fetch vs uncompacted |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& source : sources) {
    const std::vector<RowSums> rows =
        row_sums(results, [&](const SessionReplay& r) { return (r.source.empty() ? std::string("?") : r.source) == source; });
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const RowSums& w = rows[k];
      if (w.sessions == 0) continue;
      const bool base = k == results.configs.size();
      out += fmt::format("| {} | {} | {} | {} | {} | {:.4f} | {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {} |\n", source, results.config_name(k),
                         w.sessions, w.calls, w.compactions, to_usd(w.cost), w.versus(base), base ? std::string("—") : std::to_string(w.dearer),
                         percent(w.facts_visible, w.facts), percent(w.visible_l, w.probes_l), percent(w.evidence_visible, w.evidence),
                         w.versus_with_refetch(base));
    }
  }
  return out;
}

}  // namespace

MarkdownTables markdown_tables(const BenchResults& results) {
  MarkdownTables t;
  t.main = main_table(results);
  t.cost_split = cost_split_table(results);
  t.by_source = by_source_table(results);
  for (const auto& d : dearer_sessions(results))
    t.dearer += fmt::format("- {} ({}): ${:.4f}{} vs ${:.4f} uncompacted ({:+.1f}%){}\n", d.session, d.config, to_usd(d.cost_nusd),
                            d.refetch_nusd ? fmt::format(" (${:.4f} of it re-fetching missed evidence)", to_usd(d.refetch_nusd)) : "",
                            to_usd(d.baseline_nusd),
                            d.baseline_nusd ? 100.0 * (to_usd(d.cost_nusd) - to_usd(d.baseline_nusd)) / to_usd(d.baseline_nusd) : 0.0,
                            d.baseline_fits ? "" : "; uncompacted, calls were over the window");
  for (const auto& w : meter_warnings(results)) t.warnings += w + "\n";
  return t;
}

std::string markdown_table(const BenchResults& results) {
  const MarkdownTables t = markdown_tables(results);
  std::string out = t.main;
  out += "\nCost by what is billed:\n\n" + t.cost_split;
  out += "\nBy source format:\n\n" + t.by_source;
  if (!t.dearer.empty()) out += "\nDearer than uncompacted:\n\n" + t.dearer;
  for (std::size_t s = 0, nl; s < t.warnings.size(); s = nl + 1) {
    nl = t.warnings.find('\n', s);
    out += "\n" + t.warnings.substr(s, nl - s + 1);
  }
  return out;
}

std::string explain_misses(const BenchResults& results) {
  std::string out;
  for (const auto& r : results.replays)
    for (const auto& m : r.evidence.misses)
      out += fmt::format("- {} ({}): call {}: \"{}\" from {}\n", r.session, results.config_name(r.config_index), m.call, m.line.size() > 120 ? m.line.substr(0, 120) + "…" : m.line,
                         m.from);
  return out.empty() ? "\nEvidence missed: none\n" : "\nEvidence missed (the call, the line the agent used next, the result it came from):\n\n" + out;
}

std::string sessions_csv(const BenchResults& results) {
  std::string out =
      "session,source,config,model,meter,window,limit,limit_unit,calls,compactions,declines,refusals,over_window,over_budget,over_budget_tail,summaries,"
      "rejections,failures,tokens_sent,cache_read,cache_write,uncached,output,cost_usd,cache_read_usd,cache_write_usd,uncached_usd,output_usd,"
      "summarizer_calls,summarizer_cost_usd,probes_median,visible_median,recoverable_median,probes_last,visible_last,recoverable_last,"
      "facts_last,facts_visible_last,evidence_calls,evidence_probes,evidence_visible,evidence_missed,refetches,refetch_usd,"
      "cost_with_refetch_usd\n";
  for (const auto& r : results.replays)
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{},{:.9f},{},{},{},{},{},{},{},{},"
        "{},{},{},{},{},{:.9f},{:.9f}\n",
        csv_field(r.session), csv_field(r.source), csv_field(r.config), csv_field(r.model), csv_field(r.meter), r.window, r.limit, r.limit_unit,
        r.calls.size(), r.compactions, r.declines, r.refusals, r.over_window, r.over_budget, r.over_budget_tail, r.summaries,
        r.rejections, r.failures, r.sent, r.cache_read, r.cache_write, r.uncached, r.output, to_usd(r.cost_nusd), to_usd(r.read_nusd),
        to_usd(r.write_nusd), to_usd(r.uncached_nusd), to_usd(r.output_nusd), r.summarizer_calls, to_usd(r.summarizer_cost_nusd),
        r.median.probes, r.median.visible, r.median.recoverable, r.last.probes, r.last.visible, r.last.recoverable, r.last.facts,
        r.last.facts_visible, r.evidence.calls, r.evidence.probes, r.evidence.visible, r.evidence.probes - r.evidence.visible,
        r.evidence.refetches, to_usd(r.evidence.refetch_nusd), to_usd(r.cost_with_refetch_nusd()));
  return out;
}

Expected<bool> write_outputs(const BenchResults& results, const std::string& dir, std::vector<std::string>* notes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{dir + ": cannot create the folder: " + ec.message()};
  std::string sessions, timings, skipped, configs;
  for (const auto& r : results.replays) {
    sessions += to_json_line(r) + "\n";
    timings += to_timings_line(r) + "\n";
  }
  for (const auto& s : results.skipped)
    skipped += json::serialize(json::object{{"session", s.session}, {"reason", s.reason}}) + "\n";
  std::vector<std::pair<std::string, std::string>> files;
  for (std::size_t k = 0; k < results.configs.size(); ++k) {
    configs += json::serialize(json::object{{"index", k}, {"config", results.configs[k].path}, {"name", results.configs[k].name}}) + "\n";
    files.emplace_back("pipeline-" + std::to_string(k) + ".yaml", results.configs[k].pipeline);
  }
  files.emplace_back("sessions.jsonl", sessions);
  files.emplace_back("timings.jsonl", timings);
  files.emplace_back("skipped.jsonl", skipped);
  files.emplace_back("configs.jsonl", configs);
  files.emplace_back("sessions.csv", sessions_csv(results));
  std::vector<std::pair<std::string, std::string>> charts = charts_svg(results);
  for (auto& chart : sweep_charts(results)) charts.push_back(std::move(chart));
  files.emplace_back("report.html", html_report(results, charts));
  // Each chart as PNG too; without librsvg, the SVGs alone, said once.
  for (const auto& [name, svg] : charts) {
    auto png = svg_to_png(svg);
    if (!png) {
      if (notes != nullptr) notes->push_back("no PNG charts in " + dir + ": " + png.error().message);
      break;
    }
    files.emplace_back(name.substr(0, name.size() - 4) + ".png", std::move(*png));
  }
  for (auto& [name, svg] : charts) files.emplace_back(name, std::move(svg));
  if (results.sweep_long_sessions > 0)
    files.emplace_back("sweep.json", json::serialize(json::object{{"long_sessions", results.sweep_long_sessions}}) + "\n");
  for (const auto& [name, bytes] : files)
    if (auto w = write_file_atomically(dir + "/" + name, bytes); !w) return w.error();
  return true;
}

Expected<BenchResults> read_outputs(const std::string& dir) {
  BenchResults out;
  auto configs = read_lines(dir + "/configs.jsonl", true);
  if (!configs) return configs.error();
  for (std::size_t k = 0; k < configs->size(); ++k) {
    boost::system::error_code ec;
    json::value v = json::parse((*configs)[k], ec);
    if (ec || !v.is_object()) return Error{dir + "/configs.jsonl:" + std::to_string(k + 1) + ": not a JSON object"};
    std::ifstream in(dir + "/pipeline-" + std::to_string(k) + ".yaml", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    out.configs.push_back({str(v.get_object(), "config"), text.str(), str(v.get_object(), "name")});
  }
  // A folder written before configs had names: the names they go by by default.
  std::vector<std::string> paths, given;
  for (const auto& c : out.configs) paths.push_back(c.path), given.push_back(c.name);
  const std::vector<std::string> names = config_names(paths, given);
  for (std::size_t k = 0; k < out.configs.size(); ++k) out.configs[k].name = names[k];
  auto sessions = read_lines(dir + "/sessions.jsonl", true);
  if (!sessions) return sessions.error();
  for (std::size_t i = 0; i < sessions->size(); ++i) {
    auto r = replay_from_json_line((*sessions)[i], dir + "/sessions.jsonl:" + std::to_string(i + 1));
    if (!r) return r.error();
    out.replays.push_back(std::move(*r));
  }
  auto timings = read_lines(dir + "/timings.jsonl", false);
  if (!timings) return timings.error();
  ReplayIndex index;
  for (auto& r : out.replays) index[{r.session, r.config_index}] = &r;
  for (std::size_t i = 0; i < timings->size(); ++i)
    if (auto t = apply_timings_line((*timings)[i], index, dir + "/timings.jsonl:" + std::to_string(i + 1)); !t)
      return t.error();
  auto sweep = read_lines(dir + "/sweep.json", false);
  if (!sweep) return sweep.error();
  if (!sweep->empty()) {
    boost::system::error_code ec;
    json::value v = json::parse(sweep->front(), ec);
    if (ec || !v.is_object()) return Error{dir + "/sweep.json:1: not a JSON object"};
    out.sweep_long_sessions = u64(v.get_object(), "long_sessions");
  }
  auto skipped = read_lines(dir + "/skipped.jsonl", false);
  if (!skipped) return skipped.error();
  for (const auto& line : *skipped) {
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (!ec && v.is_object()) out.skipped.push_back({str(v.get_object(), "session"), str(v.get_object(), "reason")});
  }
  return out;
}

}  // namespace compactor::bench
