// The protected tail: the newest `recent.exchanges` exchanges, kept verbatim by every stage
// (an exchange is an assistant message plus the user message that answers it). Computed once
// per run by the host, never inside a tool pair.
#pragma once

#include "compactor/conversation.hpp"

#include <cstddef>

namespace compactor {

struct ProtectedTail {
  std::size_t begin = 0;      // index of the first protected message
  std::size_t exchanges = 0;  // what was asked for

  std::size_t length(const Conversation& conversation) const { return conversation.size() - begin; }
  bool contains(std::size_t index) const { return index >= begin; }
};

// The tail starts at the assistant turn that opens the `exchanges`-th newest exchange (at the
// first message of that turn when a turn is split over several messages). With fewer exchanges
// than asked, the whole conversation after its first message is protected; 0 protects nothing.
ProtectedTail compute_protected_tail(const Conversation& conversation, std::size_t exchanges);

// Moves a cut back until it starts a turn group: never at results whose call is before it,
// never inside an assistant turn split over several messages. Not below `floor`.
std::size_t align_cut(const Conversation& conversation, std::size_t cut, std::size_t floor);

}  // namespace compactor
