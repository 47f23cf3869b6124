#include "bench/html_report.hpp"

#include "bench/output.hpp"
#include "bench/sweep_report.hpp"
#include "bench/verdict.hpp"

#include <fmt/core.h>

#include <map>

namespace compactor::bench {

namespace {

std::string escape(std::string_view s) {
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

std::vector<std::string> cells(std::string_view row) {
  std::vector<std::string> out;
  row.remove_prefix(1);
  if (!row.empty() && row.back() == '|') row.remove_suffix(1);
  for (std::size_t s = 0;;) {
    const std::size_t bar = row.find('|', s);
    std::string_view cell = row.substr(s, bar == std::string_view::npos ? std::string_view::npos : bar - s);
    while (!cell.empty() && cell.front() == ' ') cell.remove_prefix(1);
    while (!cell.empty() && cell.back() == ' ') cell.remove_suffix(1);
    out.emplace_back(cell);
    if (bar == std::string_view::npos) return out;
    s = bar + 1;
  }
}

// A pipe table's rows (the header, the alignment row, the body) as an HTML table.
std::string table(const std::vector<std::string_view>& rows) {
  const std::vector<std::string> head = cells(rows.front());
  std::vector<bool> right;
  if (rows.size() > 1)
    for (const auto& a : cells(rows[1])) right.push_back(!a.empty() && a.back() == ':');
  std::string out = "<div class=\"scroll\"><table>\n<thead><tr>";
  for (const auto& h : head) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 2; r < rows.size(); ++r) {
    const std::vector<std::string> row = cells(rows[r]);
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c) out += (c < right.size() && right[c] ? "<td class=\"num\">" : "<td>") + escape(row[c]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

// A chart's SVG to put inline: without its XML namespace, which HTML does not need.
std::string inline_svg(const std::string& svg) {
  std::string out = svg;
  const std::string ns = " xmlns=\"http://www.w3.org/2000/svg\"";
  if (const std::size_t at = out.find(ns); at != std::string::npos) out.erase(at, ns.size());
  return out;
}

std::string figure(const std::map<std::string, std::string>& charts, const std::string& name) {
  auto it = charts.find(name);
  if (it == charts.end()) return "";
  return "<figure>" + inline_svg(it->second) + "<figcaption>" + escape(name) + "</figcaption></figure>\n";
}

// Two things side by side (each may be empty).
std::string pair(const std::string& left, const std::string& right) {
  return "<div class=\"pair\"><div>" + left + "</div><div>" + right + "</div></div>\n";
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1900px}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
    "table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
    "th,td{border:1px solid #ccc;padding:.2em .45em;vertical-align:top}th{background:#f2f2f2;text-align:left}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}.scroll{overflow-x:auto}"
    ".pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1.5em;align-items:start}"
    "figure{margin:0}figcaption{font-size:.8em;color:#666}svg{max-width:100%;height:auto}"
    ".verdict li{margin:.25em 0}";

// The main table without its last two columns, the pipeline's p50 and p99 wall times: the page is
// as deterministic as the other files (the times are in timings.jsonl and on stdout).
std::string without_times(const std::string& table) {
  std::string out;
  for (std::size_t s = 0, nl; s < table.size(); s = nl + 1) {
    nl = table.find('\n', s);
    std::string row = table.substr(s, nl - s);
    for (int k = 0; k < 2 && row.size() > 1; ++k) row = row.substr(0, row.rfind('|', row.size() - 2) + 1);
    out += row + "\n";
  }
  return out;
}

}  // namespace

std::string markdown_to_html(const std::string& markdown) {
  std::vector<std::string_view> lines;
  for (std::size_t s = 0, nl; s < markdown.size(); s = nl + 1) {
    nl = markdown.find('\n', s);
    if (nl == std::string::npos) nl = markdown.size();
    lines.emplace_back(std::string_view(markdown).substr(s, nl - s));
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size();) {
    const std::string_view line = lines[i];
    if (line.starts_with("|")) {
      std::vector<std::string_view> rows;
      for (; i < lines.size() && lines[i].starts_with("|"); ++i) rows.push_back(lines[i]);
      out += table(rows);
    } else if (line.starts_with("- ")) {
      out += "<ul>\n";
      for (; i < lines.size() && lines[i].starts_with("- "); ++i) out += "<li>" + escape(lines[i].substr(2)) + "</li>\n";
      out += "</ul>\n";
    } else {
      if (!line.empty()) out += "<p>" + escape(line) + "</p>\n";
      ++i;
    }
  }
  return out;
}

std::string html_report(const BenchResults& results, const std::vector<std::pair<std::string, std::string>>& list) {
  const std::map<std::string, std::string> charts(list.begin(), list.end());
  const MarkdownTables t = markdown_tables(results);
  std::size_t sessions = 0;
  for (const auto& r : results.replays) sessions += results.is_baseline(r);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>compactor bench: {} configs, {} sessions</title>\n"
      "<style>{}</style>\n</head>\n<body>\n<h1>compactor bench: {} config{} and uncompacted over {} session{}</h1>\n",
      results.configs.size(), sessions, kStyle, results.configs.size(), results.configs.size() == 1 ? "" : "s", sessions, sessions == 1 ? "" : "s");
  out += "<section class=\"verdict\">\n<h2>Verdict</h2>\n" + pair(markdown_to_html(verdict(results)), figure(charts, "evidence.svg")) + "</section>\n";
  if (results.sweep_long_sessions > 0)
    out += "<h2>The sweep</h2>\n" + markdown_to_html(sweep_report(results)) + pair(figure(charts, "frontier.svg"), figure(charts, "frontier-long.svg"));
  out += "<h2>Every figure, per config</h2>\n" + markdown_to_html(without_times(t.main)) +
         "<p>The pipeline's wall times are in timings.jsonl and in the table compactor bench prints.</p>\n";
  out += "<h2>What each config paid for</h2>\n" + pair(markdown_to_html(t.cost_split), figure(charts, "cost-split.svg"));
  out += "<h2>Tokens and cost over the sessions</h2>\n" + pair(figure(charts, "tokens-per-call.svg"), figure(charts, "cumulative-cost.svg"));
  out += "<h2>Per source format, and what the model still has</h2>\n" + pair(markdown_to_html(t.by_source), figure(charts, "retention.svg"));
  out += "<h2>Sessions</h2>\n" + pair(figure(charts, "cost-by-session.svg"),
                                       t.dearer.empty() ? "<p>No session is dearer than uncompacted.</p>\n"
                                                        : "<p>Dearer than uncompacted:</p>\n" + markdown_to_html(t.dearer));
  if (!t.warnings.empty()) out += markdown_to_html(t.warnings);
  return out + "</body>\n</html>\n";
}

}  // namespace compactor::bench
