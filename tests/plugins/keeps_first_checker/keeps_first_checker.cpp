// keeps_first: a team's own rule as a checker plugin, built only for tests: the first message
// (the user's task) is never replaced, so no stage may summarize it away. Its `head` param says
// how many of the first messages must stay (1 by default).
#include "compactor/plugin.hpp"

namespace {

using namespace compactor;

class KeepsFirstChecker final : public Checker {
 public:
  explicit KeepsFirstChecker(const ParamValues& params) : head_(static_cast<std::size_t>(params.integer("head"))) {}
  void check(const CheckInput& in, std::vector<Violation>& out) const override {
    for (std::size_t i = 0; i < head_ && i < in.before.size(); ++i) {
      if (i < in.candidate.size() && in.candidate[i].raw() == in.before[i].raw()) continue;
      out.push_back(Violation::of(name(), i == 0 ? std::string("the first message (the user's task) was replaced")
                                                 : "one of the first " + std::to_string(head_) + " messages was replaced")
                        .at(i));
      return;
    }
  }

 private:
  std::size_t head_;
};

CheckerInfo checker_info() {
  CheckerInfo info;
  info.description = "TEST ONLY: the first messages are never replaced";
  info.params = {ParamSpec::integer("head", "how many of the first messages must stay", 1).at_least(0)};
  info.create = factory_of<KeepsFirstChecker>();
  return info;
}

}  // namespace

COMPACTOR_CHECKER("keeps_first", "0.1.0", checker_info)
