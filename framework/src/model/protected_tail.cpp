#include "compactor/protected_tail.hpp"

namespace compactor {

ProtectedTail compute_protected_tail(const Conversation& conversation, std::size_t exchanges) {
  ProtectedTail tail{conversation.size(), exchanges};
  if (exchanges == 0) return tail;
  std::size_t found = 0;
  std::size_t i = conversation.size();
  while (i > 0) {
    --i;
    if (conversation[i].role() != Role::assistant) continue;
    // The first message of this assistant turn (consecutive assistant messages are one turn).
    while (i > 0 && conversation[i - 1].role() == Role::assistant) --i;
    tail.begin = i;
    if (++found == exchanges) return tail;
  }
  tail.begin = conversation.empty() ? 0 : 1;
  return tail;
}

std::size_t align_cut(const Conversation& c, std::size_t cut, std::size_t floor) {
  while (cut > floor && cut < c.size()) {
    const Message& m = c[cut];
    const Message& prev = c[cut - 1];
    bool answers_previous = m.role() == Role::user && m.has_tool_result();
    bool splits_turn = m.role() == Role::assistant && prev.role() == Role::assistant;
    bool splits_answer = m.role() == Role::user && prev.role() == Role::user && prev.has_tool_result();
    if (!answers_previous && !splits_turn && !splits_answer) break;
    --cut;
  }
  return cut;
}

}  // namespace compactor
