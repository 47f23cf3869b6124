// What the summarizing stages (summarize, reactive_compact, compact_request) share: archive the
// whole history first, ask the summarizer for the older part, refuse a summary that is empty, too
// long or truncated, and replace the older part with one user message that quotes the active
// request verbatim, marks the summary as untrusted reference, names the snapshot's receipt, says
// that earlier permissions do not authorize new actions, and records (machine-readably) how many
// summaries the history has had — so limits hold across runs (the text: summary_format.hpp). A history that already starts with
// summaries gets a rolling one (plan.begin 0): the previous summary messages are part of what is
// summarized (and archived), and one summary replaces them all; or an appended one (plan.begin =
// the number of summary messages): it is inserted after them, which stay byte for byte, so the
// prompt cache keeps its prefix. Any failure is a decline: the conversation stays as it was.
#pragma once

#include "compactor/param_schema.hpp"
#include "compactor/stage.hpp"
#include "compactor/summarizer.hpp"
#include "compactor/summary_format.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace compactor {

struct CompactionPlan {
  std::size_t begin = 0;          // the summary messages [0, begin) stay as they are (an appended summary)
  std::size_t end = 0;            // summarize messages [begin, end); keep the rest verbatim
  bool reactive = false;          // "[compactor reactive summary]" rather than "[compactor summary]"
  bool require_fit = true;        // the candidate must fit the budget's limit
  std::size_t max_chars = 1000;   // longest summary accepted
  int max_summaries = 0;          // summaries a history may have (0: no limit; each folds the previous one)
  std::uint64_t min_growth = 0;   // loop guard: growth (in the budget unit) needed since the last one
};

// The params every summarizing stage declares (max_chars, max_summaries), and the plan they give.
ParamSchema summary_params();
CompactionPlan plan_from(const ParamValues& params);

StageResult compact_with_summary(const Conversation& committed, const StageContext& context, const CompactionPlan& plan);

}  // namespace compactor
