// A conversation `check`, `run` and `count` read, in any form Compactor reads: a wire format's
// request (the Messages API's request body, messages array or JSONL; a Chat Completions request
// body or messages array; a Responses request body or input items array; a Gemini API request
// body, `contents` with `parts`; …), read by its adapter so that `run` writes the compacted
// conversation back in the same form with everything it carried; or a log (Claude Code's
// session JSONL, a SWE-agent trajectory, a Gemini CLI chat) that `compactor import` turns into
// Anthropic messages, or a Codex session file, read as the Responses request its last call sent.
#pragma once

#include "wire/wire_format.hpp"

#include "compactor/error.hpp"
#include "import/importers.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compactor::wire {

struct InputDocument {
  std::unique_ptr<WireRequest> request;  // the conversation, and how it is written back
  const WireFormat* format = nullptr;    // whose rules it must pass
  std::string imported;                  // for a log: the import's summary line; else empty
};

// The names --input-format takes: auto, every wire format's (anthropic, openai, responses, gemini),
// and the logs' and sessions' (claude-code, codex, gemini-cli).
const std::vector<std::string>& input_format_names();

// The usage error of a bad --input-format; nothing when it names one.
std::optional<std::string> input_format_error(const std::optional<std::string>& format);

// Reads `path` ("-": stdin) as `format` (auto or unset: detected from the bytes and the name).
// Errors name the file and the place.
Expected<InputDocument> read_input_document(const std::string& path, const std::optional<std::string>& format);

// A session `import` and `bench` bring in: an OpenAI Chat Completions request body or messages
// array read by its adapter (every field it carries kept, in the model form), else what the
// importers make of a file (import/importers.hpp: Claude Code logs, SWE-agent trajectories,
// Anthropic messages; a Chat history the API would refuse is repaired there, every repair
// listed). `format` says whose rules the session must pass.
struct ImportedSession {
  ImportResult result;
  const WireFormat* format = nullptr;
};
Expected<ImportedSession> import_session(const std::string& path, std::optional<ImportFormat> format, bool sidechain = false);

// Detects the format of a file's bytes (and name): a Codex session opens with its session_meta
// record; Claude Code JSONL lines carry "sessionId" or "parentUuid"; OpenAI histories have role
// "tool" messages, tool_calls, or "history" (a system message alone does not make a history
// OpenAI: use --input-format openai for those).
ImportFormat detect_import_format(std::string_view bytes, const std::string& name);

// Reads and converts a file in any format ("-" is stdin); Anthropic input is read as is.
Expected<ImportResult> import_file(const std::string& path, std::optional<ImportFormat> format, bool sidechain = false);

}  // namespace compactor::wire
