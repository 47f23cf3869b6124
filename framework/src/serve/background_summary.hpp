// Model summaries written in the background (`summarizer.mode: background`): the worker side.
//
// The call whose summarizing stage needs a summary gets the extractive one as a stand-in (marked
// with the key of the model's: compactor/summary_format.hpp) and never waits for a model. What the
// model must summarize is kept as a record in the tenant's store (a state entry, so it counts
// toward serve.tenant_max_bytes, is signed on Redis and is dropped by gc as state is), keyed by a
// hash of the messages, the quoted requests and max_chars; the worker that records it takes the
// store's lease on the key and names it in its outcome, and serve runs the summary in a worker of
// its own once the call's answer came (serve/summary_pool.hpp). A later call of the conversation
// finds the stand-in in its history: once the record holds the model's summary, it takes the
// stand-in's place (the stand-in archived first); while it does not and no lease is held (serve
// was killed, the attempt failed), it is started again, up to summarizer.background_attempts.
#pragma once

#include "serve/job_protocol.hpp"

#include "host/pipeline.hpp"
#include "store/store.hpp"
#include "summarizer/background_summaries.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor::serve {

// What one background summary is: its input, its attempts and, once written, the model's text.
struct SummaryRecord {
  std::string messages;               // the messages to summarize, JSONL (each one's own bytes)
  std::vector<std::string> requests;  // the quoted requests (context for the model)
  std::size_t max_chars = 0;
  std::int64_t attempts = 0;          // started so far
  std::optional<std::string> summary; // the model's, validated as the summarizing stages do
  std::string failure;                // the last attempt's, one line

  std::string to_json() const;
  static std::optional<SummaryRecord> from_json(std::string_view text);
};

// Where the records live (the tenant's store) and how summaries are started: by taking the lease
// (its time: summarizer.background_timeout_s) and naming the key in started(), for serve to run.
class StoredSummaries final : public BackgroundSummaries {
 public:
  StoredSummaries(store::Store& store, const PipelineConfig& config) : store_(store), config_(config) {}

  Found find_or_start(const SummaryRequest& request) override;

  // `input` with every stand-in whose model summary is ready replaced by it (each stand-in
  // archived first, through `store`); a stand-in whose summary is neither ready nor under way is
  // started again. Unchanged when there is nothing to replace.
  Conversation with_ready_summaries(const Conversation& input, StageLogger& log);

  // The keys this worker took the lease of: serve starts their summaries.
  const std::vector<std::string>& started() const { return started_; }
  int replaced() const { return replaced_; }

 private:
  std::optional<SummaryRecord> read(const std::string& key);
  // Takes the lease and counts the attempt; false when under way elsewhere or given up.
  bool start(const std::string& key, SummaryRecord& record);

  store::Store& store_;
  const PipelineConfig& config_;
  std::vector<std::string> started_;
  int replaced_ = 0;
};

// The store entry that holds the record of the summary named `key`.
std::string record_key(const std::string& key);

// A background summary's job in its worker: the model is asked (the pipeline's summarizer, inline),
// and its summary, or why there is none, is written into the record; the lease is let go either
// way. compacted: written; failed: the warning says why.
JobOutcome run_summary_job(Pipeline& pipeline, store::Store& store, const std::string& key, StageLogger& log);

}  // namespace compactor::serve
