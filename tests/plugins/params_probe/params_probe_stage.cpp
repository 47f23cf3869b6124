// params_probe: a test-only stage declaring one parameter of every type, so config tests can
// show how each kind of mistake is reported. It returns its input; its factory refuses the label
// "refuse".
#include "compactor/plugin.hpp"

namespace {

using namespace compactor;

class Probe final : public Stage {
 public:
  StageResult run(const Conversation& c, const StageContext&) override { return StageResult::candidate(c); }
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "TEST ONLY: declares one parameter of each type";
  info.params = {
      ParamSpec::required(ParamType::string, "label", "a required string"),
      ParamSpec::integer("count", "an integer from 1 to 10", 3).at_least(1).at_most(10),
      ParamSpec::number("ratio", "a number from 0 to 1", 0.5).at_least(0).at_most(1),
      ParamSpec::boolean("enabled", "a boolean", true),
      ParamSpec::choice("mode", "one of fast, thorough", "fast", {"fast", "thorough"}),
  };
  info.create = [](const ParamValues& p) -> Expected<std::unique_ptr<Stage>> {
    // Reading every value proves the host passed each with its declared type.
    (void)p.string("label"), (void)p.integer("count"), (void)p.number("ratio"), (void)p.boolean("enabled"),
        (void)p.string("mode");
    // A factory's own refusal of values its schema lets through (a config wrong for it: exit 2).
    if (p.string("label") == "refuse") return Error{"label \"refuse\" is one this stage refuses"};
    return std::unique_ptr<Stage>(std::make_unique<Probe>());
  };
  return info;
}

}  // namespace

COMPACTOR_STAGE("params_probe", "0.1.0", stage_info)
