// The OpenAI Chat Completions API (`POST /v1/chat/completions`), spoken by most agents that are
// not Claude Code: the messages are read into the conversation model and written back with only
// the `messages` array's elements replaced, each one the pipeline left alone as the client's own
// bytes.
#pragma once

#include "wire/wire_format.hpp"

namespace compactor::wire {

const WireFormat& openai_chat();

// An OpenAI API's error body for what went wrong in the proxy: {"error": {message, type, code}}
// (with "param": null, as the Responses API writes it, when `with_param`).
ErrorReply openai_error_reply(ProxyError kind, std::string_view message, bool with_param);

}  // namespace compactor::wire
