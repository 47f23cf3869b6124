// Context management the provider does itself, asked for in a request's `context_management`:
// Anthropic's edits (`compact_*`: a server-side summary that replaces what precedes it;
// `clear_tool_uses_*`: old tool results cleared above a trigger) and the OpenAI Responses API's
// (`{type: "compaction"}`). The adapters read their API's shape of it (WireFormat::native_context);
// this is what the shapes share. Edits that only drop thinking (`clear_thinking_*`) change
// nothing of the budget.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace compactor::wire {

// The request body's `context_management`, parsed; nothing when the body has none.
std::optional<boost::json::value> context_management_of(std::string_view body);

// Why the over-budget stages defer ("the request asks the API to make room itself
// (context_management: compact_20260112)") when an edit of `edits` makes room, or empty.
std::string deferral_for(const boost::json::array& edits);

}  // namespace compactor::wire
