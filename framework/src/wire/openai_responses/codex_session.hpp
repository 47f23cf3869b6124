// Codex CLI's session files: the rollout JSONL it writes under $CODEX_HOME/sessions/ (one line a
// record: session_meta, turn_context, response_item, token_usage_record, event_msg, compacted…).
// The response_item lines are the Responses API input items Codex sends, in order; the base
// instructions (session_meta) are the developer message it sends first. They are read as one
// Responses request (wire/openai_responses/responses_items.hpp), so a Codex session is the conversation Codex's
// last call sent, with every item carried. Each token_usage_record is a model call: its usage
// is recorded, on the line of the first item that call produced.
#pragma once

#include "import/importers.hpp"
#include "wire/input_form.hpp"

namespace compactor {

// A file whose first record is a Codex session_meta.
bool is_codex_session(std::string_view bytes);

Expected<ImportResult> import_codex_session(std::string_view bytes, const std::string& source);

namespace wire {

// `codex`: such a file, read as the Responses request its last call sent (held to the Responses
// API's rules, and written as that request by `import`).
const InputForm& codex_form();

}  // namespace wire

}  // namespace compactor
