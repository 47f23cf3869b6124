// The chats Gemini CLI saves (`~/.gemini/tmp/<project hash>/chats/session-*.json[l]`), imported
// as Anthropic messages so that `bench` replays them and `check`, `run`, `count` read them.
// Two layouts: one JSON object `{sessionId, projectHash, …, messages: [...]}` (older versions),
// and JSONL (0.61): a header line, then one line per message record (a record with an id seen
// before replaces it: a model turn is written again once its tool calls finished) and
// `{"$set": {...}}` lines (`messages` replaces the list; other fields are bookkeeping).
//
// A `user` record is a user turn; a `gemini` record is a model turn: its text, then each of its
// `toolCalls` as a tool_use, answered by the call's recorded `result` parts in the next user
// turn (0.61 also writes those parts as the next user record: read once). `thoughts` are the
// model's thought summaries, which the client never sends back: left out, like `info`, `error`
// and other records the model never sees. `tokens` give the recorded calls (input and output
// tokens, model). Inline images become image blocks; other parts the Messages API has no place
// for are left out, each counted.
#pragma once

#include "import/importers.hpp"
#include "wire/input_form.hpp"

#include <string>
#include <string_view>

namespace compactor {

// Whether the start of a file is a Gemini CLI chat (it names a projectHash).
bool is_gemini_chat(std::string_view head);

ImportResult import_gemini_chat(std::string_view bytes, const std::string& source);

namespace wire {

// `gemini-cli`: such a chat, imported (its conversation in the Anthropic form).
const InputForm& gemini_cli_form();

}  // namespace wire

}  // namespace compactor
