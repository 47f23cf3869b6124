// A conversation `check`, `run` and `count` read, and a session `import` and `bench` bring in, in
// any form a registered wire format lists (wire/input_form.hpp): its API's request (read by its
// adapter, so that `run` writes the compacted conversation back in the same form with everything
// it carried) or a log its agents write (imported into Anthropic messages). `--input-format`
// names a form; `auto` (or none) detects it from the bytes and the file's name.
#pragma once

#include "wire/input_form.hpp"
#include "wire/wire_format.hpp"

#include "compactor/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor::wire {

// What detection is for: `check`, `run` and `count` read every form; `import` and `bench` bring in
// sessions (logs, and the requests a form imports as one).
enum class FormUse { requests, sessions };

// The names --input-format takes for a use: auto, then every form's, sorted.
std::vector<std::string> input_format_names(FormUse use = FormUse::requests);

// The usage error of a bad --input-format; nothing when it names one.
std::optional<std::string> input_format_error(const std::optional<std::string>& format, FormUse use = FormUse::requests);

// The form detection takes `bytes` (named `file_name`) for: the first whose rules claim them,
// else the first format's first form.
const InputForm& detect_input_form(std::string_view bytes, std::string_view file_name, FormUse use);

// Reads `path` ("-": stdin) as `format` (auto or unset: detected). Errors name the file and the place.
Expected<InputDocument> read_input_document(const std::string& path, const std::optional<std::string>& format);

// A session `import` and `bench` bring in, read by its form (auto or unset: detected); `sidechain`
// imports a Claude Code log's sub-agent chain.
Expected<ImportedSession> import_session(const std::string& path, const std::optional<std::string>& format, bool sidechain = false);

}  // namespace compactor::wire
