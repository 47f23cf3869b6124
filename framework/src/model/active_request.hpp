// The active request: what the user asked for in this turn. It is never dropped or paraphrased
// (summaries quote it verbatim, snip keeps it). Given with --request, or found in the
// conversation as the newest user prompt: the newest user text that is not a tool result, a
// command echo (`<command-name>…`), a system reminder, an interruption notice or a Compactor
// marker (`[compactor …`).
//
// Real prompts are often a short answer ("yes", "pwd", "script") to the work asked for earlier.
// Rule: when the newest prompt is shorter than kSubstantiveChars code points, the newest earlier
// prompt of at least that length is the substantive request and is quoted too, before it.
#pragma once

#include "compactor/conversation.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compactor {

inline constexpr std::size_t kSubstantiveChars = 40;

struct ActiveRequest {
  std::string text;                          // the newest prompt; empty: the conversation has none
  std::optional<std::size_t> message_index;  // where it was found, when found in the conversation
  // Every text to keep verbatim, in conversation order: the substantive prompt (when the newest
  // is short and an earlier one is not), then the newest. Empty when there is none.
  std::vector<std::string> texts;
};

ActiveRequest find_active_request(const Conversation& conversation);

// True for user text that is not something the user asked: command echoes, reminders,
// interruption notices.
bool is_runtime_text(std::string_view text);

// True for user text that carries the agent's durable instructions rather than a turn of the
// conversation: Claude Code's system reminder holding CLAUDE.md (`# claudeMd`, "Contents of
// …/CLAUDE.md"), and the same for AGENTS.md, GEMINI.md and QWEN.md. Summaries carry such text
// verbatim (compactor/summary_compaction.hpp): it is never summarized away.
bool is_durable_instruction(std::string_view text);

}  // namespace compactor
