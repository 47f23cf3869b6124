// split_pair: a deliberately broken stage, built only for tests. It drops the user message that
// answers the first tool_use, splitting that pair, so tests can show that the `pairing` checker
// rejects the candidate and the conversation stays as it was.
#include "compactor/plugin.hpp"

namespace {

using namespace compactor;

class SplitPairStage final : public Stage {
 public:
  StageResult run(const Conversation& committed, const StageContext&) override {
    std::vector<MessagePtr> messages = committed.messages();
    for (std::size_t i = 1; i < messages.size(); ++i) {
      if (messages[i]->role() == Role::user && messages[i]->has_tool_result()) {
        messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(i));
        return StageResult::candidate(committed.with_messages(std::move(messages)));
      }
    }
    return StageResult::candidate(committed);
  }
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "TEST ONLY: splits a tool pair on purpose";
  info.create = factory_of<SplitPairStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("split_pair", "0.1.0", stage_info)
