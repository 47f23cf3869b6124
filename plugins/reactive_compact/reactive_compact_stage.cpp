// reactive_compact: after the API refused the call (`--reason prompt_too_long`, the config's
// on_prompt_too_long), keep the newest `keep_messages` messages (the cut moved off a pair, never
// into the protected tail) and summarize the rest (reactive_compact in the four-step reference
// design whose numbers are the defaults). The estimate was wrong, so the candidate need not fit the
// estimated budget, only be smaller. At most once a turn: a history whose first message already
// records a reactive compaction for the same request is not compacted again (that design's
// MAX_REACTIVE_RETRIES = 1) and the refusal goes back to the caller.
#include "compactor/plugin.hpp"
#include "compactor/summary_compaction.hpp"

namespace {

using namespace compactor;

class ReactiveCompactStage final : public Stage {
 public:
  explicit ReactiveCompactStage(const ParamValues& p)
      : keep_(static_cast<std::size_t>(p.integer("keep_messages"))), plan_(plan_from(p)) {
    plan_.reactive = true;
    plan_.require_fit = false;
  }

  StageResult run(const Conversation& committed, const StageContext& context) override {
    SummaryState state = read_summary_state(committed);
    if (state.reactive && state.requests == context.requests)
      return StageResult::decline("already compacted reactively for this request in this turn; not compacting again");
    CompactionPlan plan = plan_;
    std::size_t n = committed.size();
    std::size_t cut = n > keep_ ? n - keep_ : 0;
    plan.end = align_cut(committed, std::min(cut, context.tail.begin), 1);
    return compact_with_summary(committed, context, plan);
  }

 private:
  std::size_t keep_;
  CompactionPlan plan_;
};

StageInfo stage_info() {
  StageInfo info;
  info.summarizes = true;
  info.description = "after prompt_too_long: keeps the newest messages and summarizes the rest, once a turn";
  info.params = {ParamSpec::integer("keep_messages", "newest messages kept verbatim", 5).at_least(1)};
  for (auto& spec : summary_params()) info.params.push_back(std::move(spec));
  info.create = factory_of<ReactiveCompactStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("reactive_compact", "0.1.0", stage_info)
