// The request an agent sends at one call of a recorded session, for `compactor replay --through`:
// the whole uncompacted history up to the answer the call got (the original answers played back
// as the assistant messages), as a Messages API request body, with the client's cache_control
// breakpoint on the newest message's last block only, as Claude Code moves it along each call.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"

#include <cstdint>
#include <string>

namespace compactor::bench {

struct RequestFields {
  std::string model;            // set when the session's body names none
  std::uint64_t max_tokens = 0;  // set when it names none (0: not set)
};

// The body of the call made before message `answer` of `session` (bench/replay.hpp call_answers).
Expected<std::string> agent_request(const Conversation& session, std::size_t answer, const RequestFields& fields);

}  // namespace compactor::bench
