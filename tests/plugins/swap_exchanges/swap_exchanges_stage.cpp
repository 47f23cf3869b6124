// swap_exchanges: a deliberately misbehaving stage, built only for tests. It swaps the first two
// whole tool exchanges (each an assistant tool_use and the user message answering it): every pair
// stays whole and adjacent, nothing is removed, so only the `order` checker can see it.
#include "compactor/plugin.hpp"

namespace {

using namespace compactor;

class SwapExchangesStage final : public Stage {
 public:
  StageResult run(const Conversation& committed, const StageContext&) override {
    std::vector<MessagePtr> messages = committed.messages();
    std::vector<std::size_t> starts;  // assistant tool_use messages answered by the next message
    for (std::size_t i = 0; i + 1 < messages.size() && starts.size() < 2; ++i)
      if (messages[i]->role() == Role::assistant && messages[i]->has_tool_use() && messages[i + 1]->has_tool_result()) {
        starts.push_back(i);
        ++i;
      }
    if (starts.size() < 2 || starts[1] != starts[0] + 2) return StageResult::decline("no two adjacent tool exchanges");
    std::swap(messages[starts[0]], messages[starts[1]]);
    std::swap(messages[starts[0] + 1], messages[starts[1] + 1]);
    return StageResult::candidate(committed.with_messages(std::move(messages)));
  }
};

StageInfo stage_info() {
  StageInfo info;
  info.description = "TEST ONLY: swaps the first two tool exchanges";
  info.create = factory_of<SwapExchangesStage>();
  return info;
}

}  // namespace

COMPACTOR_STAGE("swap_exchanges", "0.1.0", stage_info)
