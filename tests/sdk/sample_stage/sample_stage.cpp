// The smallest useful out-of-tree stage: it declines when the conversation is short, and
// otherwise returns it unchanged.
#include "compactor/plugin.hpp"

namespace {

class SampleStage final : public compactor::Stage {
 public:
  explicit SampleStage(std::int64_t min_messages) : min_messages_(min_messages) {}
  compactor::StageResult run(const compactor::Conversation& c, const compactor::StageContext&) override {
    if (static_cast<std::int64_t>(c.size()) < min_messages_) return compactor::StageResult::decline("too short to bother");
    return compactor::StageResult::candidate(c);
  }

 private:
  std::int64_t min_messages_;
};

void register_stages(compactor::PluginRegistrar& registrar) {
  compactor::StageInfo info;
  info.name = "sample";
  info.description = "an out-of-tree example";
  info.params = {compactor::ParamSpec::integer("min_messages", "shorter conversations are left alone", 2).at_least(0)};
  info.create = [](const compactor::ParamValues& p) -> compactor::Expected<std::unique_ptr<compactor::Stage>> {
    return std::unique_ptr<compactor::Stage>(std::make_unique<SampleStage>(p.integer("min_messages")));
  };
  registrar.add_stage(std::move(info));
}

}  // namespace

COMPACTOR_PLUGIN("sample", "1.0.0", "stage:sample", register_stages)
