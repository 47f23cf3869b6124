// The OpenAI Responses API's `input` items read into the conversation model, for the Responses
// wire format (a live request) and the Codex session importer (a recorded one) alike.
//
// - The leading developer and system messages, and the context a client injects as user
//   messages before the first request (Codex's environment context and AGENTS.md text), are the
//   head: counted like `system`, never touched.
// - Later developer or system messages, injected context and `compaction` items are system
//   entries: kept in place by the host (anywhere outside a tool pair), counted, never seen by a
//   stage, never taken for the user's request.
// - A run of items the model produced (reasoning, assistant messages, calls, server tool calls,
//   unknown items) is one assistant message; a run of call outputs is one user message of
//   tool_results; a user message is a user message. A call (`function_call`, `custom_tool_call`,
//   any `*_call` with a `call_id`) is a tool_use whose id is the call_id; its output a tool_result.
// - What the model has no field for is carried (the carry rule): a reasoning item whole, with its
//   encrypted_content, in a carried block; an item's own fields (id, status, type) in a carried
//   "fields" block before its text, or in a call's or output's `carried` member; content parts
//   other than text in carried "part" blocks; unknown items in carried "item" blocks.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"

#include <boost/json/array.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace compactor {

struct ResponsesItemRange {
  std::size_t first = 0, last = 0;  // items [first, last)
};

struct ResponsesHistory {
  std::optional<Conversation> conversation;
  std::size_t head = 0;                       // items [0, head) are the head
  std::vector<ResponsesItemRange> origins;    // per model message, the items it was read from
  std::vector<std::size_t> entry_items;       // per system entry, the item it is
  std::unordered_map<std::string, std::pair<std::size_t, std::size_t>> results;  // call id → (message, block)
  std::unordered_map<std::string, std::size_t> result_items;                     // call id → its output item
};

// Reads `parsed` (the input items) whose bytes are `items` (views into `body`, in order).
// `fixed` is the rest of the request the model reads and the budget counts (instructions,
// tools), as JSON text in `body`. `where` names the list in errors ("request: input").
Expected<ResponsesHistory> read_responses_items(std::shared_ptr<const std::string> body, const std::vector<std::string_view>& items,
                                                const boost::json::array& parsed, const std::vector<std::string_view>& fixed,
                                                const std::string& where);

// True for a user message's text that a client injects as context rather than the user's words
// (Codex: <environment_context>, "# AGENTS.md instructions for …", <user_instructions>, …).
bool is_injected_context(std::string_view text);

}  // namespace compactor
