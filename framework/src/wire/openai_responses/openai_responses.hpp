// The OpenAI Responses API (`POST /v1/responses`), spoken by Codex CLI and the OpenAI Agents SDK:
// the `input` items are read into the conversation model (responses_items.hpp says how)
// and written back with only the `input` array's elements replaced, every item the pipeline left
// alone as the client's own bytes. A request whose history the upstream holds
// (`previous_response_id`, `conversation`) and the API's other endpoints (`/v1/responses/compact`,
// a stored response) are passed through untouched.
#pragma once

#include "wire/wire_format.hpp"

namespace compactor::wire {

const WireFormat& openai_responses();

}  // namespace compactor::wire
