// compact_request: the model asked for compaction by calling a tool (`compact`, configurable) in
// its newest turn. Once that whole batch has its results (the harness ran every call of the turn
// first, as the four-step reference design requires, so no side effect is lost or repeated), the
// history up to and including the batch is summarized — all of it but the protected tail, which
// stays verbatim.
#include "compactor/plugin.hpp"
#include "compactor/summary_compaction.hpp"

namespace {

using namespace compactor;

class CompactRequestStage final : public Stage {
 public:
  explicit CompactRequestStage(const ParamValues& p) : tool_(p.string("tool_name")), plan_(plan_from(p)) {
    plan_.require_fit = false;
  }

  StageResult run(const Conversation& c, const StageContext& context) override {
    std::size_t n = c.size();
    // The newest exchange: the final user message answers the assistant turn before it.
    if (n < 2 || c[n - 1].role() != Role::user || !c[n - 1].has_tool_result()) return StageResult::nothing_to_do();
    std::size_t turn = n - 1;
    while (turn > 0 && c[turn - 1].role() == Role::user) --turn;
    bool requested = false;
    while (turn > 0 && c[turn - 1].role() == Role::assistant) {
      --turn;
      for (const Block& b : c[turn].blocks()) requested |= b.kind() == BlockKind::tool_use && b.name() == tool_;
    }
    if (!requested) return StageResult::nothing_to_do();
    // Every call of that turn is answered (the input passed `pairing`), so the batch is complete.
    CompactionPlan plan = plan_;
    plan.end = align_cut(c, std::min(n, context.tail.begin), 1);
    return compact_with_summary(c, context, plan);
  }

 private:
  std::string tool_;
  CompactionPlan plan_;
};

StageInfo stage_info() {
  StageInfo info;
  info.summarizes = true;
  info.description = "summarizes the history once the model's own compact tool call has completed";
  info.params = {ParamSpec::string("tool_name", "the tool the model calls to ask for compaction", "compact")};
  for (auto& spec : summary_params()) info.params.push_back(std::move(spec));
  info.forced = true;  // the model asked: the gate never declines it
  info.acts_when = {{StageTrigger::Kind::tool_called, "tool_name"}};
  info.create = factory_of<CompactRequestStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("compact_request", "0.1.0", stage_info)
