// Summaries a model writes in the background (`summarizer.mode: background`, under serve): a
// summarizing stage asks for one as always; when the model's is ready it gets it, and otherwise it
// gets the extractive summary of the same messages, which compact_with_summary marks as a stand-in
// (SummaryMessage::stands_in_for, from stand_in_key) while the model's is started, so the call never waits for a model. A later call puts the
// model's summary in the stand-in's place (serve/background_summary.hpp). The caller of the run
// says where summaries are kept and how they are started: the pipeline only asks.
#pragma once

#include "compactor/summarizer.hpp"

#include <memory>
#include <optional>
#include <string>

namespace compactor {

class BackgroundSummaries {
 public:
  virtual ~BackgroundSummaries() = default;
  struct Found {
    std::string key;                     // names the request's summary (64 hex digits)
    std::optional<std::string> summary;  // the model's, when ready
  };
  // The summary of `request` when it is ready; otherwise it is started (unless it is already
  // under way, or was given up) and only its key comes back.
  virtual Found find_or_start(const SummaryRequest& request) = 0;
};

// A summarizer that asks `source` and falls back to `stand_in` (the extractive one) meanwhile.
std::unique_ptr<Summarizer> make_background_summarizer(BackgroundSummaries& source, Summarizer& stand_in);

// The key of the model summary that the last summary `summarizer` gave stands in for: empty unless
// it is a background summarizer whose last answer was a stand-in. The SDK's Summary is not
// widened for it (every backend builds one): the host asks its own summarizer.
std::string stand_in_key(const Summarizer* summarizer);

}  // namespace compactor
