// What an import of a session people bring reports: each API's importers live with its adapter
// (wire/<api>/: Claude Code's session logs, OpenAI chat histories and SWE-agent trajectories,
// Codex CLI's session files, Gemini CLI's chats). Real logs are messy; an importer that died or
// dropped data silently would make every later number a lie, so every line skipped and every
// repair is counted and listed in the ImportReport.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace compactor {

struct ImportRepair {
  std::string kind;    // orphan_result_dropped, lost_result_answered, …
  std::size_t line = 0;  // 1-based line of the input (Claude Code) or index of the message (OpenAI)
  std::string detail;
};

struct ImportReport {
  std::string source;
  std::string format;                      // the form it was read as: claude-code, openai… (wire/input_form.hpp)
  std::size_t lines = 0;                   // input lines (Claude Code) or messages (OpenAI)
  std::vector<std::size_t> broken_lines;   // not valid JSON: skipped, 1-based
  std::string first_broken_why;            // why the first of them is: "line 2: duplicate object key …"
  std::size_t meta_skipped = 0;            // isMeta lines
  std::size_t sidechain_skipped = 0;       // sub-agent lines of a main session
  std::size_t other_skipped = 0;           // lines that are not messages (summary, system, snapshots…)
  std::size_t rewound_skipped = 0;         // messages of abandoned branches (the session was rewound)
  std::size_t fields_dropped = 0;          // OpenAI extras the API would refuse (thought, action, agent…)
  std::vector<ImportRepair> repairs;
  std::size_t messages = 0;
  std::size_t tool_uses = 0;               // in the imported conversation
  std::size_t tool_uses_in_log = 0;        // distinct tool_use ids in the chain's message lines read
  bool empty = false;                      // nothing importable

  std::string to_json() const;
  std::string summary_line() const;  // "12 messages, 5 tool_uses, 3 broken lines skipped, 1 repair"
};

// An API call a Claude Code log recorded: the first assistant line of a message.id that carries
// usage. `prompt_tokens` is input + cache read + cache creation tokens: the prompt as the API
// counted it (what `calibrate` fits meters to).
struct RecordedCall {
  std::size_t line = 0;
  std::string model;  // "<synthetic>" for a line no API call made
  std::uint64_t prompt_tokens = 0;
  // The answer's output tokens: the largest over the message's lines (Claude Code writes one line
  // per content block while streaming, the earlier ones with partial counts).
  std::uint64_t output_tokens = 0;
  std::int64_t time_ms = 0;  // when the log wrote the answer (import/log_time.hpp); 0: it says no time
};

struct ImportResult {
  std::optional<Conversation> conversation;  // absent when the session imports empty
  ImportReport report;
  // For each message of the conversation, the input line (Claude Code) or message index (OpenAI)
  // it starts at: how `calibrate` finds the prompt each recorded API call was given.
  std::vector<std::size_t> message_lines;
  // Claude Code: every call the log recorded (sub-agent and rewound lines included), the first
  // sessionId, and the first line of a compaction (isCompactSummary or compact_boundary; 0: none).
  std::vector<RecordedCall> recorded_calls;
  std::string session_id;
  std::size_t compaction_line = 0;
};

}  // namespace compactor
