// summarize: over the budget, the exchanges older than the protected tail are summarized into one
// first user message (seed 000's prepare_context, seed 001's compact_history); the protected tail
// follows verbatim. The shared rules are in compactor/summary_compaction.hpp: snapshot archived
// first, summary validated, request quoted verbatim, summary count read from the history itself
// (max_summaries holds across runs), the candidate must fit the budget and be smaller, and a loop
// guard refuses a second summary before the history has grown by `min_growth`.
#include "compactor/plugin.hpp"
#include "compactor/summary_compaction.hpp"

namespace {

using namespace compactor;

class SummarizeStage final : public Stage {
 public:
  explicit SummarizeStage(const ParamValues& p) : plan_(plan_from(p)) {
    plan_.min_growth = static_cast<std::uint64_t>(p.integer("min_growth"));
  }

  StageResult run(const Conversation& committed, const StageContext& context) override {
    if (!context.over_limit(committed)) return StageResult::candidate(committed);
    CompactionPlan plan = plan_;
    plan.end = align_cut(committed, std::min(context.tail.begin, committed.size()), 1);
    return compact_with_summary(committed, context, plan);
  }

 private:
  CompactionPlan plan_;
};

void register_stages(PluginRegistrar& registrar) {
  StageInfo info;
  info.name = "summarize";
  info.description = "summarizes the exchanges older than the protected tail into one reference message";
  info.params = summary_params(2);
  info.params.push_back(
      {"min_growth", ParamType::integer, "loop guard: growth (budget unit) needed before another summary", std::int64_t{1000}, false, 0, {}, {}});
  info.create = factory_of<SummarizeStage>();
  registrar.add_stage(std::move(info));
}

}  // namespace

COMPACTOR_PLUGIN("summarize", "0.1.0", register_stages)
