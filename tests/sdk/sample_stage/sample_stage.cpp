// The smallest out-of-tree stage: it only says how long the conversation is. Its name is spelled
// once, in COMPACTOR_STAGE; CMakeLists.txt's compactor_add_stage(sample …) must agree with it.
#include "compactor/plugin.hpp"

#include <string>

namespace {

class SampleStage final : public compactor::Stage {
 public:
  explicit SampleStage(const compactor::ParamValues& params) : min_messages_(params.integer("min_messages")) {}
  compactor::StageResult run(const compactor::Conversation& c, const compactor::StageContext& context) override {
    if (static_cast<std::int64_t>(c.size()) < min_messages_) return compactor::StageResult::nothing_to_do("too short to bother");
    context.log.info(std::to_string(c.size()) + " messages");
    return compactor::StageResult::nothing_to_do();
  }

 private:
  std::int64_t min_messages_;
};

compactor::StageInfo stage_info() {
  compactor::StageInfo info;
  info.description = "an out-of-tree example";
  info.params = {compactor::ParamSpec::integer("min_messages", "shorter conversations are left alone", 2).at_least(0)};
  info.create = compactor::factory_of<SampleStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("sample", "1.0.0", stage_info)
