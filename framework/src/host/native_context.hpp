// Context management the provider does itself, asked for in the request: Anthropic's
// `context_management.edits` (`compact_*`: a server-side summary that replaces what precedes it;
// `clear_tool_uses_*`: old tool results cleared above a trigger) and the OpenAI Responses API's
// `context_management` (`{type: "compaction"}`). When a request asks the API to make room, the
// over-budget stages defer to it (docs/pipelines-and-stages.md): compacting the history as well
// would break the prompt cache twice and summarize a summary. Edits that only drop thinking
// (`clear_thinking_*`) change nothing of that.
#pragma once

#include <string>
#include <string_view>

namespace compactor {

// Why the over-budget stages defer ("the request asks the API to compact: context_management
// compact_20260112"), or empty when the body asks for nothing that makes room.
std::string native_context_management(std::string_view body);

}  // namespace compactor
