// TEST ONLY: see team_checks.hpp.
#include "team_checks.hpp"

#include "compactor/factory.hpp"
#include "compactor/summary_compaction.hpp"

namespace compactor::test {
namespace {

class NoSecrets final : public Checker {
 public:
  void check(const CheckInput& input, std::vector<Violation>& out) const override {
    const Conversation& c = input.candidate;
    for (std::size_t i = 0; i < c.size(); ++i)
      for (const Block& b : c[i].blocks())
        if (b.kind() == BlockKind::text && b.text().find("GATEWAY-SECRET") != std::string_view::npos)
          out.push_back(Violation::of(name(), "a text block holds the team's secret marker").at(i));
  }
};

class TeamSummary final : public Stage {
 public:
  explicit TeamSummary(const ParamValues& params) : plan_(plan_from(params)) {}

  StageResult run(const Conversation& committed, const StageContext& context) override {
    CompactionPlan plan = plan_;
    plan.end = align_cut(committed, context.tail.begin, 1);
    return compact_with_summary(committed, context, plan);
  }

 private:
  CompactionPlan plan_;
};

}  // namespace

CheckerInfo team_no_secrets_checker() {
  CheckerInfo info;
  info.name = "team_no_secrets";
  info.description = "no text block holds the team's secret marker";
  info.create = factory_of<NoSecrets>();
  return info;
}

StageInfo team_summary_stage() {
  StageInfo info;
  info.name = "team_summary";
  info.description = "summarizes all but the protected tail";
  info.params = summary_params();
  info.summarizes = true;
  info.create = factory_of<TeamSummary>();
  return info;
}

}  // namespace compactor::test
