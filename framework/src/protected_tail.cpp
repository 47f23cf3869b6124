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

}  // namespace compactor
