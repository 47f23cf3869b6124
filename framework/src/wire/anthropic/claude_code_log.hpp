// Claude Code's session logs (JSONL, one line per event): the main chain (or a sub-agent's) as
// Anthropic messages, every skipped line and repair counted, and the API calls the log recorded.
#pragma once

#include "import/importers.hpp"

#include <string>
#include <string_view>

namespace compactor {

// `sidechain`: import the sub-agent chain (agent-*.jsonl files) instead of the main one.
ImportResult import_claude_code(std::string_view bytes, const std::string& source, bool sidechain);

}  // namespace compactor
