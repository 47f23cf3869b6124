// What `compactor bench` writes: one JSON line per session × config (the unit of --merge), the
// per-session CSV, the Markdown table and the SVG charts (bench/charts.hpp), all made from the
// same results so a merged set of shards gives the same files as one run. Wall times live apart
// (timings.jsonl).
#pragma once

#include "bench/results.hpp"

#include "compactor/error.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace compactor::bench {

// One line (no newline) and back. The timings line holds the per-call pipeline times alone.
std::string to_json_line(const SessionReplay& r);
std::string to_timings_line(const SessionReplay& r);
Expected<SessionReplay> replay_from_json_line(std::string_view line, const std::string& where);
// Reads the per-call times of a timings line into the matching replay's calls (`index`: the
// replays by (session, config_index)).
using ReplayIndex = std::map<std::pair<std::string, std::uint64_t>, SessionReplay*>;
Expected<bool> apply_timings_line(std::string_view line, const ReplayIndex& index, const std::string& where);

// The Markdown tables: one row per config (the pipeline-time columns come from the timings), the
// cost split, the rows per source format; the sessions dearer than uncompacted as a list, and
// the meters' warnings as lines.
struct MarkdownTables {
  std::string main, cost_split, by_source, dearer, warnings;
};
MarkdownTables markdown_tables(const BenchResults& results);
// All of them, as stdout shows them.
std::string markdown_table(const BenchResults& results);
std::string sessions_csv(const BenchResults& results);
// --explain: every probe a replay missed, with its call and the result it came from.
std::string explain_misses(const BenchResults& results);

// Writes every file of an --out folder (sessions.jsonl, timings.jsonl, skipped.jsonl,
// configs.jsonl, sessions.csv, pipeline-N.yaml, the charts as SVG and PNG, report.html). What a
// reader should know but is no failure (no PNG without librsvg) goes to `notes`.
Expected<bool> write_outputs(const BenchResults& results, const std::string& dir, std::vector<std::string>* notes = nullptr);

// Reads an --out folder back (for --merge).
Expected<BenchResults> read_outputs(const std::string& dir);

}  // namespace compactor::bench
