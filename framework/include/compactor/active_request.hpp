// The active request: what the user asked for in this turn. It is never dropped or paraphrased
// (summaries quote it verbatim, snip keeps it). Given with --request, or found as the newest user
// text that is not a tool result, a command echo (`<command-name>…`), a system reminder, an
// interruption notice or a Compactor marker (`[compactor …`).
#pragma once

#include "compactor/conversation.hpp"

#include <optional>
#include <string>

namespace compactor {

struct ActiveRequest {
  std::string text;                          // empty: the conversation has none
  std::optional<std::size_t> message_index;  // where it was found, when found in the conversation
};

ActiveRequest find_active_request(const Conversation& conversation);

// True for user text that is not something the user asked: command echoes, reminders,
// interruption notices.
bool is_runtime_text(std::string_view text);

}  // namespace compactor
