// A recorded session as the bench and `compactor replay` read it: what the importers make of a
// log or a messages array (import/importers.hpp), else a request body `compactor run` reads that
// no importer does (a Responses or a Gemini API body), read by its wire format's adapter and held
// to that API's rules.
#pragma once

#include "compactor/error.hpp"
#include "import/importers.hpp"
#include "wire/wire_format.hpp"

#include <string>

namespace compactor::bench {

struct SessionRead {
  ImportResult result;                      // its conversation is present
  const wire::WireFormat* format = nullptr;  // whose rules it must pass
  std::string source;                        // claude-code, codex, gemini-cli, openai, anthropic, responses, gemini
  std::string model;                         // from the log or the body's "model"; "" when neither names one
  bool openai = false;                       // an OpenAI API's session: its tokenizer
};

// The session in `path`; the error `run` would give for a body it cannot read, or the importers'.
Expected<SessionRead> read_session(const std::string& path);

}  // namespace compactor::bench
