// keeps_first: a team's own rule as a checker plugin, built only for tests: the first message
// (the user's task) is never replaced, so no stage may summarize it away.
#include "compactor/plugin.hpp"

namespace {

using namespace compactor;

class KeepsFirstChecker final : public Checker {
 public:
  std::string_view name() const override { return "keeps_first"; }
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    if (in.before.empty() || (!in.candidate.empty() && in.candidate[0].raw() == in.before[0].raw())) return;
    out.push_back(Violation::of(name(), "the first message (the user's task) was replaced").at(0));
  }
};

void register_checkers(PluginRegistrar& registrar) {
  CheckerInfo info;
  info.name = "keeps_first";
  info.description = "TEST ONLY: the first message is never replaced";
  info.create = [] { return CheckerPtr(std::make_unique<KeepsFirstChecker>()); };
  registrar.add_checker(std::move(info));
}

}  // namespace

COMPACTOR_PLUGIN("keeps_first", "0.1.0", "checker:keeps_first", register_checkers)
