// One form of input the commands read, named as `--input-format` names it: an API's request
// ("anthropic", "openai", "responses", "gemini") or a log an agent writes ("claude-code",
// "codex", "gemini-cli"). Each wire format lists its forms (WireFormat::input_forms), so a new
// API's requests and logs are read by `check`, `run`, `count`, `import` and `bench` with no
// change to them: they ask the registry (wire/input_document.hpp).
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"
#include "import/importers.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::wire {

class WireFormat;
class WireRequest;
class InputForm;

// A conversation `check`, `run` and `count` read, and how `run` writes it back.
struct InputDocument {
  std::unique_ptr<WireRequest> request;  // the conversation, and how it is written back
  const WireFormat* format = nullptr;    // whose rules it must pass
  std::string imported;                  // for a log: the import's summary line; else empty
  const InputForm* form = nullptr;       // the form it was read as
};

// A session `import` and `bench` bring in.
struct ImportedSession {
  ImportResult result;
  const WireFormat* format = nullptr;  // whose rules it must pass (the form its conversation is in)
  const WireFormat* api = nullptr;     // the API the session talked to: how its tokens are counted
  // The conversation is the API's own request (a Codex session: the Responses request its last
  // call sent), written as it was read, carried data and all; else it is in the Anthropic form.
  bool written_as_read = false;
};

// Where a form's input comes from.
struct InputSource {
  std::string shown;       // the path as errors name it ("<stdin>" for -)
  std::string file_name;   // its last component: detection and Claude Code's agent-*.jsonl read it
  bool detected = false;   // the form was found from the bytes, not named: a reader may add a hint
  bool sidechain = false;  // import the sub-agent chain (Claude Code)
};

// When detection takes bytes for a form. Detection asks every form's rules in ascending `order`,
// across all formats, and the first that claims the bytes reads them (the built-in rules are
// 100 apart, so a team's can sit between): a file's own signature first (a Gemini body's start,
// a Codex session's first record, a log's markers), a request's shape after, the default last.
struct Detection {
  int order = 0;
  // Asked when `import` and `bench` detect a session too; else by `check`, `run` and `count`
  // only, which read every API's requests.
  bool for_sessions = false;
  bool (*claims)(std::string_view bytes, std::string_view file_name) = nullptr;
};

class InputForm {
 public:
  virtual ~InputForm() = default;

  // Its word for --input-format, and one line for the commands' --help.
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;

  // How detection recognises it (none: read only when named).
  virtual std::vector<Detection> detections() const { return {}; }

  // As `check`, `run` and `count` read it. Errors name the file and the place.
  virtual Expected<InputDocument> read(std::string bytes, const InputSource& source) const = 0;

  // Whether `import` and `bench` take it as a session, and how they read one.
  virtual bool imports_sessions() const { return false; }
  virtual Expected<ImportedSession> import_session(std::string bytes, const InputSource& source) const;
};

// The document of a request `format` reads.
Expected<InputDocument> request_document(const WireFormat& format, std::string bytes, const std::string& source);

// The document of a log an importer read: its conversation in the Anthropic form, held to the
// rules of `format`, and the import's summary line.
Expected<InputDocument> imported_document(Expected<ImportResult> imported, const WireFormat& format);

}  // namespace compactor::wire
