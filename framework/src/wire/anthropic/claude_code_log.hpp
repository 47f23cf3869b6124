// Claude Code's session logs (JSONL, one line per event): the main chain (or a sub-agent's) as
// Anthropic messages, every skipped line and repair counted, and the API calls the log recorded.
#pragma once

#include "import/importers.hpp"
#include "wire/input_form.hpp"

#include <string>
#include <string_view>

namespace compactor {

// `sidechain`: import the sub-agent chain (agent-*.jsonl files) instead of the main one.
ImportResult import_claude_code(std::string_view bytes, const std::string& source, bool sidechain);

namespace wire {

// `claude-code`: such a log, for the commands that read any input (detected by the markers its
// lines carry: sessionId, parentUuid…).
const InputForm& claude_code_form();

}  // namespace wire

}  // namespace compactor
