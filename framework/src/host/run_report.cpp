#include "host/run_report.hpp"
#include "platform/counted.hpp"

#include <boost/json.hpp>

#include <map>
#include <fmt/core.h>

namespace compactor {

std::string_view to_string(StageStatus status) {
  switch (status) {
    case StageStatus::committed: return "committed";
    case StageStatus::unchanged: return "unchanged";
    case StageStatus::skipped: return "skipped";
    case StageStatus::declined: return "declined";
    case StageStatus::rejected: return "rejected";
    case StageStatus::failed: return "failed";
  }
  return "?";
}

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::ok: return "ok";
    case RunStatus::declined: return "declined";
    case RunStatus::deferred: return "deferred";
    case RunStatus::over_budget: return "over_budget";
    case RunStatus::rejected: return "rejected";
    case RunStatus::not_compacted: return "not_compacted";
    case RunStatus::aborted: return "aborted";
    case RunStatus::bad_input: return "bad_input";
    case RunStatus::failed: return "failed";
  }
  return "?";
}

ExitCode exit_code_of(RunStatus status) {
  switch (status) {
    case RunStatus::ok:
    case RunStatus::declined:
    case RunStatus::deferred: return kExitOk;
    case RunStatus::over_budget:
    case RunStatus::rejected:
    case RunStatus::not_compacted:
    case RunStatus::aborted: return kExitNotDone;
    case RunStatus::bad_input: return kExitBadInput;
    case RunStatus::failed: return kExitPluginError;
  }
  return kExitPluginError;
}

std::vector<std::string> StageRunReport::violation_lines() const {
  std::vector<std::string> out;
  out.reserve(violations.size());
  for (const Violation& v : violations)
    out.push_back(v.to_string() + " (stage " + stage + (plugin_file.empty() ? "" : ", plugin " + plugin_file) + ")");
  return out;
}

namespace {

namespace json = boost::json;

// Tokens appear only when the budget counts them (with a meter); chars and bytes always.
json::object size_json(const SizeSnapshot& s, SizeUnit unit) {
  json::object o{{"messages", s.messages}, {"chars", s.sizes.chars}, {"bytes", s.sizes.bytes}};
  if (unit == SizeUnit::tokens) o["tokens"] = s.sizes.tokens;
  return o;
}

// Two-space indented JSON, so reports read well and diff well.
void pretty(const json::value& v, std::string& out, int indent) {
  auto pad = [&](int n) { out.append(static_cast<std::size_t>(n), ' '); };
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.get_object();
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      std::size_t i = 0;
      for (const auto& kv : o) {
        pad(indent + 2);
        out += json::serialize(json::value(kv.key())) + ": ";
        pretty(kv.value(), out, indent + 2);
        out += ++i < o.size() ? ",\n" : "\n";
      }
      pad(indent);
      out += "}";
      return;
    }
    case json::kind::array: {
      const auto& a = v.get_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < a.size(); ++i) {
        pad(indent + 2);
        pretty(a[i], out, indent + 2);
        out += i + 1 < a.size() ? ",\n" : "\n";
      }
      pad(indent);
      out += "]";
      return;
    }
    default: out += json::serialize(v);
  }
}

}  // namespace

namespace {

// A stage's receipts counted: how many, their bytes, and how many of each kind.
json::object archived_counts(const StageRunReport& s) {
  json::object kinds;
  std::uint64_t bytes = 0;
  for (const ArchivedReceipt& a : s.archived) {
    bytes += a.bytes;
    kinds[a.kind] = kinds.contains(a.kind) ? kinds[a.kind].as_int64() + 1 : 1;
  }
  return json::object{{"receipts", s.archived.size()}, {"bytes", bytes}, {"kinds", std::move(kinds)}};
}

// A kind counted for people: "14 tool results", "1 summary snapshot".
std::string kind_count(const std::string& kind, std::size_t n) {
  static const std::map<std::string, std::string> words = {{"tool_result", "tool result"},
                                                           {"persisted_output", "persisted output"},
                                                           {"summary_snapshot", "summary snapshot"},
                                                           {"messages", "messages snapshot"},
                                                           {"unnamed", "unnamed blob"}};
  auto it = words.find(kind);
  return std::to_string(n) + " " + (it == words.end() ? kind : it->second) + (n == 1 ? "" : "s");
}

}  // namespace

std::string RunReport::archived_line() const {
  std::size_t receipts = 0;
  std::uint64_t bytes = 0;
  std::string per_stage;
  for (const auto& s : stages) {
    if (s.archived.empty()) continue;
    std::map<std::string, std::size_t> kinds;
    std::uint64_t stage_bytes = 0;
    for (const ArchivedReceipt& a : s.archived) ++kinds[a.kind], stage_bytes += a.bytes;
    std::string counts;
    for (const auto& [kind, n] : kinds) counts += (counts.empty() ? "" : ", ") + kind_count(kind, n);
    per_stage += fmt::format("{}{}: {}, {} bytes", per_stage.empty() ? "" : "; ", s.stage, counts, stage_bytes);
    receipts += s.archived.size();
    bytes += stage_bytes;
  }
  if (receipts == 0) return "";
  return fmt::format("archived: {}, {} bytes ({})\n", counted(receipts, "receipt", "receipts"), bytes, per_stage);
}

std::string RunReport::to_json() const {
  json::array stages_json;
  json::array archived_json;
  for (const auto& s : stages) {
    json::array violations_json;
    for (const auto& v : s.violation_lines()) violations_json.push_back(json::string(v));
    for (const ArchivedReceipt& a : s.archived)
      archived_json.push_back(json::object{{"receipt", a.receipt}, {"stage", s.stage}, {"kind", a.kind}, {"bytes", a.bytes}});
    json::object o{{"stage", s.stage},
                   {"plugin", s.plugin_file},
                   {"plugin_version", s.plugin_version},
                   {"status", to_string(s.status)},
                   {"reason", s.reason},
                   {"violations", violations_json},
                   {"before", size_json(s.before, budget.unit)},
                   {"after", size_json(s.after, budget.unit)},
                   {"wall_us", s.wall_us},
                   {"archived", archived_counts(s)}};
    stages_json.push_back(o);
  }
  json::object root{
      {"schema_version", kRunReportSchemaVersion},
      {"config", config_file},
      {"input", input},
      {"reason", reason},
      {"budget", json::object{{"unit", to_string(budget.unit)}, {"limit", budget.limit}, {"target", budget.target}}},
      {"input_size", size_json(input_size, budget.unit)},
      {"output_size", size_json(output_size, budget.unit)},
      {"first_changed_message", first_changed_message ? json::value(*first_changed_message) : json::value(nullptr)},
      {"stages", stages_json},
      {"archived", archived_json},
      {"status", to_string(status)},
      {"error", error},
      {"exit_code", static_cast<int>(exit_code())},
      {"resolved_pipeline", resolved_pipeline},
  };
  // What a fixed budget without prices never has: said only when there is something to say.
  if (!model.empty()) root["model"] = model;
  if (window > 0) root["window"] = json::object{{"tokens", window}, {"from", window_from}};
  if (!meter.empty()) root["meter"] = meter;
  if (gate)
    root["gate"] = json::object{{"commit", gate->commit},     {"saved_usd", gate->saved_usd}, {"broken_usd", gate->broken_usd},
                                {"horizon_calls", gate->horizon}, {"cache", gate->warm ? "warm" : "cold"}};
  if (!summarizer_calls.empty()) {
    json::array calls;
    std::uint64_t in = 0, out = 0;
    double cost = 0;
    bool priced = true;
    for (const auto& c : summarizer_calls) {
      in += c.call.input_tokens;
      out += c.call.output_tokens;
      priced = priced && c.cost_usd.has_value();
      cost += c.cost_usd.value_or(0);
      calls.push_back(json::object{{"model", c.call.model},
                                   {"input_tokens", c.call.input_tokens},
                                   {"output_tokens", c.call.output_tokens},
                                   {"latency_ms", c.call.latency_ms},
                                   {"retries", c.call.retries},
                                   {"outcome", c.call.outcome},
                                   {"cost_usd", c.cost_usd ? json::value(*c.cost_usd) : json::value(nullptr)}});
    }
    root["summarizer"] = json::object{{"calls", calls},
                                      {"input_tokens", in},
                                      {"output_tokens", out},
                                      {"cost_usd", priced ? json::value(cost) : json::value(nullptr)},
                                      {"prices", prices}};
  }
  std::string out;
  pretty(root, out, 0);
  return out + "\n";
}

std::string RunReport::summary() const {
  std::string unit(to_string(budget.unit));
  std::string out = fmt::format("compactor run: {}, {} {} in; budget {} {} (target {}){}\n",
                                counted(input_size.messages, "message", "messages"), input_size.sizes.in(budget.unit), unit,
                                budget.limit, unit, budget.target,
                                window > 0 ? fmt::format(" of a {}-token window ({}{})", window, window_from, meter.empty() ? "" : ", " + meter) : "");
  for (const auto& s : stages) {
    std::string detail;
    switch (s.status) {
      case StageStatus::committed:
        detail = fmt::format("{} → {} {}, {} → {}", s.before.sizes.in(budget.unit), s.after.sizes.in(budget.unit), unit,
                             s.before.messages, counted(s.after.messages, "message", "messages"));
        break;
      case StageStatus::rejected: detail = s.violations.empty() ? "" : s.violation_lines().front(); break;
      default: detail = s.reason; break;
    }
    out += fmt::format("  {:<18} {:<10} {}", s.stage, to_string(s.status), detail);
    if (s.status != StageStatus::skipped) out += fmt::format(" ({:.2f} ms)", static_cast<double>(s.wall_us) / 1000.0);
    out += "\n";
  }
  if (output) {
    out += fmt::format("output: {}, {} {}; first changed message: {}\n", counted(output_size.messages, "message", "messages"),
                       output_size.sizes.in(budget.unit), unit,
                       first_changed_message ? "messages." + std::to_string(*first_changed_message) : std::string("none"));
    out += archived_line();
  }
  if (!summarizer_calls.empty()) {
    std::uint64_t in = 0, out_tokens = 0, failed = 0, retries = 0;
    std::int64_t ms = 0;
    double cost = 0;
    bool priced = true;
    for (const auto& c : summarizer_calls) {
      in += c.call.input_tokens;
      out_tokens += c.call.output_tokens;
      failed += c.call.outcome != "ok";
      retries += static_cast<std::uint64_t>(c.call.retries);
      ms += c.call.latency_ms;
      priced = priced && c.cost_usd.has_value();
      cost += c.cost_usd.value_or(0);
    }
    out += fmt::format("summarizer: {} call{} to {} ({} failed, {} retr{}), {} input + {} output tokens, {}, {:.2f} s\n",
                       summarizer_calls.size(), summarizer_calls.size() == 1 ? "" : "s", summarizer_calls.front().call.model,
                       failed, retries, retries == 1 ? "y" : "ies", in, out_tokens,
                       priced ? fmt::format("${:.4f}", cost) : std::string("cost unknown (no price for the model)"),
                       static_cast<double>(ms) / 1000.0);
  }
  if (gate) out += "cost gate: " + gate->to_string() + "\n";
  out += fmt::format("status: {} (exit {})\n", to_string(status), static_cast<int>(exit_code()));
  return out;
}

}  // namespace compactor
