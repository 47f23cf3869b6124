// The Anthropic Messages API (`POST /v1/messages`): the conversation model's own form, so a body
// is read as it is and a compacted conversation is written as the model writes it.
#pragma once

#include "wire/wire_format.hpp"

namespace compactor::wire {

const WireFormat& anthropic_messages();

}  // namespace compactor::wire
