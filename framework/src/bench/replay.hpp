// Replaying one recorded session through one pipeline call by call, as an agent lives it: a
// model call happens before each assistant message of the original, and its request is the
// history sent last time plus the messages that arrived since. The model's answers are the
// original ones: a replay cannot know what the model would have said with less context.
#pragma once

#include "bench/evidence.hpp"
#include "bench/retention.hpp"

#include "archive/file_system.hpp"
#include "compactor/conversation.hpp"
#include "compactor/meter.hpp"
#include "compactor/stage_logger.hpp"
#include "host/pipeline.hpp"
#include "pricing/price_table.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace compactor::bench {

// One model call of the replay. Tokens are the bench meter's.
struct CallRecord {
  std::uint64_t messages = 0;         // in the request sent
  std::uint64_t sent = 0;             // tokens of the request sent
  std::uint64_t cached_messages = 0;  // whole messages shared, byte for byte, with the previous request
  std::uint64_t cache_read = 0;       // tokens of that prefix, when it reaches the minimum cacheable length
  std::uint64_t cache_write = 0;      // tokens after the prefix, when the request is cacheable at all
  std::uint64_t output = 0;           // tokens of the original answer (recorded in the log, else counted)
  bool compacted = false;             // the request differs from the history the agent held
  bool refused = false;               // over the window: the on_prompt_too_long pipeline ran
  std::string stages;                 // "micro:committed summarize:declined" (skipped stages left out)
  // The request sent in the config's budget unit when that is not tokens (0 otherwise): where a
  // chars or bytes limit lies in tokens, for the charts.
  std::uint64_t budget_size = 0;
  std::int64_t pipeline_us = 0;       // wall time of the pipeline runs (timings.jsonl only)
};

// USD to nano-USD, rounded, and back.
std::uint64_t to_nusd(double usd);
double to_usd(std::uint64_t nusd);

// The name a replay without a pipeline goes by: the uncompacted baseline every config is compared with.
inline constexpr const char* kUncompacted = "uncompacted";

struct SessionReplay {
  std::string session;  // relative to the corpus
  std::string source;   // its format: claude-code, codex, gemini-cli, openai, anthropic
  std::string config;   // kUncompacted for the baseline
  std::uint64_t config_index = 0;  // the baseline's is the number of configs
  std::string model;  // from the log, --model, or the price table's default
  std::string meter;  // "calibrated/sonnet", "o200k", …
  std::vector<CallRecord> calls;
  std::uint64_t compactions = 0, refusals = 0, over_window = 0, over_budget = 0, summaries = 0;
  std::uint64_t declines = 0;  // compactions the cost gate declined
  // Calls still over budget whose protected tail (and the request in it) alone is over the limit:
  // no policy could fit them, so they are counted apart from over_budget.
  std::uint64_t over_budget_tail = 0;
  std::uint64_t rejections = 0;  // stage candidates a checker refused
  std::uint64_t failures = 0;    // calls whose input a checker refused, or whose pipeline failed
  std::uint64_t sent = 0, cache_read = 0, cache_write = 0, uncached = 0, output = 0;
  // Costs in nano-USD, integers: they add up and survive the JSON round trip of --merge exactly
  // (Boost.JSON 1.81 does not parse every double back to the same bits).
  std::uint64_t cost_nusd = 0;
  // The same split by what is billed: cache reads, cache writes, uncached input, output.
  std::uint64_t read_nusd = 0, write_nusd = 0, uncached_nusd = 0, output_nusd = 0;
  std::uint64_t window = 0;  // the model's window the replay refused calls over, in tokens
  std::uint64_t limit = 0;   // the config's budget limit at that window (0: the baseline), in limit_unit
  std::string limit_unit;    // tokens, chars or bytes ("" for the baseline)
  // A summarizer that is a model: its own calls, tokens and cost (priced by the config's `prices:`,
  // else by the bench's table).
  std::uint64_t summarizer_calls = 0, summarizer_input = 0, summarizer_output = 0;
  std::uint64_t summarizer_cost_nusd = 0;
  Retention last, median;
  Evidence evidence;  // what the agent went on to use, and the re-fetch charge for what it missed
  std::vector<std::string> errors;  // one line per failure

  // What "dearer than uncompacted" compares: the cost with the calls that fetch a missed probe again.
  std::uint64_t cost_with_refetch_nusd() const { return cost_nusd + evidence.refetch_nusd; }
};

// A file system for the bench's scratch archive: the real one without the syncs (the scratch
// folder is removed afterwards; durability is not what is measured, and two syncfs per call
// would dominate the replay).
FileSystem& scratch_file_system();

struct ReplaySetup {
  std::string session;  // its name in the corpus, for the output and logs
  std::shared_ptr<const Meter> meter;  // counts every token the replay reports
  std::string meter_name;
  const ModelPrice* price = nullptr;
  const PriceTable* prices = nullptr;  // prices a model summarizer's calls the config did not price
  std::string model;
  std::uint64_t window = 200000;  // the model's hard limit, in the meter's tokens
  bool openai = false;            // the session is an OpenAI API's (its tokenizer for an unknown model)
  std::string archive_dir;
  // Output tokens the log recorded for an answer, by message index (else the meter counts it).
  std::map<std::size_t, std::uint64_t> recorded_output;
  // When the log wrote each answer (ms since the epoch), by message index: the idle gap before a
  // call is the time between its answer and the previous one's, and a call after the price's cache
  // lifetime finds the cache cold (it reads nothing and writes the whole request). Without times,
  // every call comes within the lifetime.
  std::map<std::size_t, std::int64_t> recorded_time;
  // Called with each call's request as sent (0-based call index): how the server's continuity
  // test compares its outputs with the replay's.
  std::function<void(std::size_t call, const Conversation& sent)> on_call;
  // The API's rules for the session's wire format (its adapter's), when it is not the Messages
  // API: the pipeline runs with them and the last request is checked against them.
  const std::vector<CheckerPtr>* rules = nullptr;
  // The session's evidence probes (found once for every config): measured at each call that has some.
  const EvidenceIndex* evidence = nullptr;
};

// The message indexes of `session` a model call happens before: every assistant message but a first one.
std::vector<std::size_t> call_answers(const Conversation& session);

// Replays `session` (as imported) through `pipeline`, or without one (null): the uncompacted
// baseline, which sends the whole history every call. Never fails: a call whose pipeline fails
// is recorded in `failures` and `errors`, and the agent is taken to send its history as it was.
SessionReplay replay_session(const Conversation& session, Pipeline* pipeline, const ReplaySetup& setup, StageLogger& log);

// The number of whole messages at the start of `request` that are byte-identical to those of
// `previous` (cache_control markers ignored).
std::size_t shared_prefix(const Conversation& previous, const Conversation& request);

}  // namespace compactor::bench
