// summarize: over the budget, the older exchanges are summarized into one first user message
// (prepare_context in the careful reference design, compact_history in the four-step one whose
// numbers are the defaults) and the newest ones follow verbatim. It keeps, verbatim, the protected
// tail and as many of the newest exchanges as fit `keep_fraction` of the budget's target (cut never
// inside a pair), so the model keeps its working state; what is older is summarized. A history that
// starts with a summary gets a rolling one: the previous summary is folded into the new one, so a
// session of any length stays within budget with one summary message. With `append: true` the new
// summary is added after the previous ones instead, which stay byte for byte, so the prompt cache
// keeps the prefix before it; once the history has `max_segments` summary messages the next one
// rolls them all up into one (segments cannot grow without end). The shared rules are in
// compactor/summary_compaction.hpp: snapshot archived first, summary validated, request quoted
// verbatim, the candidate must fit the limit and be smaller, and a loop guard refuses another
// summary before the history has grown by `min_growth`.
#include "compactor/plugin.hpp"
#include "compactor/summary_compaction.hpp"

#include <cmath>

namespace {

using namespace compactor;

class SummarizeStage final : public Stage {
 public:
  explicit SummarizeStage(const ParamValues& p)
      : plan_(plan_from(p)),
        keep_fraction_(p.number("keep_fraction")),
        append_(p.boolean("append")),
        max_segments_(static_cast<std::size_t>(p.integer("max_segments"))) {
    plan_.min_growth = static_cast<std::uint64_t>(p.integer("min_growth"));
  }

  StageResult run(const Conversation& committed, const StageContext& context) override {
    if (!context.over_target(committed)) return StageResult::nothing_to_do();
    CompactionPlan plan = plan_;
    const std::size_t n = committed.size();
    if (const std::size_t segments = leading_summaries(committed); append_ && segments < max_segments_) plan.begin = segments;
    plan.end = align_cut(committed, std::min(context.tail.begin, n), 1);
    if (keep_fraction_ > 0 && plan.end > 1) {
      // The oldest message from which the rest fits the share, then the first cut at or after it.
      const auto share = static_cast<std::uint64_t>(std::floor(keep_fraction_ * static_cast<double>(context.budget.target)));
      std::uint64_t kept = 0;
      std::size_t start = n;
      while (start > plan.begin + 1) {
        const std::uint64_t size = committed.size_of(committed[start - 1], context.budget.unit);
        if (kept + size > share) break;
        kept += size;
        --start;
      }
      while (start < plan.end && align_cut(committed, start, 1) != start) ++start;
      plan.end = std::min(plan.end, start);
    }
    return compact_with_summary(committed, context, plan);
  }

 private:
  CompactionPlan plan_;
  double keep_fraction_;
  bool append_;
  std::size_t max_segments_;
};

StageInfo stage_info() {
  StageInfo info;
  info.summarizes = true;
  info.description = "summarizes the older exchanges into one reference message, keeping the newest that fit";
  info.params = summary_params();
  info.params.push_back(
      ParamSpec::integer("min_growth", "loop guard: growth (budget unit) needed before another summary", 1000).at_least(0));
  info.params.push_back(ParamSpec::number("keep_fraction",
                                          "share of the budget's target kept verbatim as the newest exchanges (0: the protected tail only)",
                                          0.0)
                            .at_least(0.0)
                            .at_most(0.9));
  info.params.push_back(ParamSpec::boolean(
      "append", "a new summary goes after the previous ones, which stay byte for byte (the prompt cache keeps them), until max_segments",
      false));
  info.params.push_back(
      ParamSpec::integer("max_segments", "with append: summary messages a history may hold; the next summary rolls them up into one", 4)
          .at_least(1));
  info.create = factory_of<SummarizeStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("summarize", "0.1.0", stage_info)
