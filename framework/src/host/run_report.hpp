// What a run did, stage by stage: the JSON report (`--report`, schema-versioned) and the
// human summary the CLI prints.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/stage.hpp"
#include "compactor/summarizer.hpp"
#include "compactor/violation.hpp"
#include "host/cost_gate.hpp"
#include "host/exit_code.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor {

inline constexpr int kRunReportSchemaVersion = 1;

enum class StageStatus {
  committed,  // ran, candidate passed every checker, now the conversation
  unchanged,  // ran and returned its input
  skipped,    // its `when` was false
  declined,   // ran and said why it could not act; conversation unchanged
  rejected,   // its candidate broke a rule; conversation unchanged
  failed,     // threw (a plugin failure); the run stops
};
std::string_view to_string(StageStatus status);

// How a run ended. Each has one exit code: ok, declined (the cost gate found the compaction
// dearer than the cache it breaks, and the input went on as it was) and deferred (the request asks
// the API to make room itself, so the over-budget stages left it to the API) 0; over_budget, rejected (a stage's candidate broke
// a rule and was skipped), not_compacted (prompt_too_long, nothing could be compacted) and
// aborted (a rejection under on_violation: abort) 1; bad_input 2; failed (a plugin failure, or the
// archive could not be made durable) 3.
enum class RunStatus { ok, declined, deferred, over_budget, rejected, not_compacted, aborted, bad_input, failed };
std::string_view to_string(RunStatus status);
ExitCode exit_code_of(RunStatus status);

struct SizeSnapshot {
  std::size_t messages = 0;
  Sizes sizes;
  static SizeSnapshot of(const Conversation& c) { return {c.size(), c.sizes()}; }
};

// A blob a committed stage archived: its receipt, what it holds and its size. The kind is read
// from where the stage's output names the receipt: `tool_result` (a result's content, replaced by
// a marker), `persisted_output` (a result's content of which the marker keeps a preview),
// `summary_snapshot` (the messages a summary message stands for) or `messages` (messages a
// marker stands for, or a message whose other blocks changed); `unnamed` when nothing names it.
struct ArchivedReceipt {
  std::string receipt;
  std::string kind;
  std::uint64_t bytes = 0;
};

struct StageRunReport {
  std::string stage;
  std::string plugin_file;     // "<built-in>" for in-process stages
  std::string plugin_version;
  bool summarizes = false;     // the stage writes a summary (StageInfo::summarizes)
  StageStatus status = StageStatus::skipped;
  std::string reason;          // why skipped / unchanged / declined / failed
  std::vector<Violation> violations;  // what its rejected candidate broke
  // Each violation on one line, naming this stage and its plugin file: "pairing: messages.3: …
  // (stage split_pair, plugin /…/compactor_stage_split_pair.so)".
  std::vector<std::string> violation_lines() const;
  SizeSnapshot before;
  SizeSnapshot after;
  std::int64_t wall_us = 0;  // microseconds
  std::vector<ArchivedReceipt> archived;  // what it archived, when committed, in the order it did
};

// A summarizer's model call with its price, when the config's price table has the model.
struct PricedSummarizerCall {
  SummarizerCall call;
  std::optional<double> cost_usd;
};

struct RunReport {
  std::string config_file;
  std::string input;
  std::string reason = "before_call";  // or "prompt_too_long"
  Budget budget;
  std::string model;         // the request's model id; empty when it names none
  std::uint64_t window = 0;  // the context window the budget came from (0: a fixed budget)
  std::string window_from;   // where the window came from ("claude-sonnet-4-5", …)
  std::string meter;         // the meter that counted tokens ("calibrated/sonnet", …); empty outside tokens
  double input_usd_per_mtok = 0;  // the model's uncached input price in the price table (0: not priced)
  std::optional<GateDecision> gate;  // the cost gate's figures, when it weighed the compaction
  SizeSnapshot input_size;
  std::optional<SizeSnapshot> received_size;  // RunOptions::received's, when given
  SizeSnapshot output_size;
  std::optional<std::size_t> first_changed_message;  // a prompt cache reuses everything before it
  std::vector<StageRunReport> stages;
  std::string resolved_pipeline;  // print_pipeline() of the config that ran
  RunStatus status = RunStatus::ok;
  std::string error;  // for bad_input / failed: the line(s) printed
  ExitCode exit_code() const { return exit_code_of(status); }
  std::optional<Conversation> output;  // the last committed conversation (exit 0 and 1)
  std::vector<PricedSummarizerCall> summarizer_calls;  // in the report only when a model was called
  std::string prices;                                  // the price table's source and date, when priced

  std::string to_json() const;
  std::string summary() const;  // a few lines for people
  // "archived: 15 receipts, 197304 bytes (micro: 14 tool results, 71261 bytes; summarize: 1
  // summary snapshot, 126043 bytes)"; empty when nothing was archived.
  std::string archived_line() const;
};

}  // namespace compactor
