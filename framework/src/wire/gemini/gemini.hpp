// The Gemini API (`POST /v1beta/models/<model>:generateContent` and `:streamGenerateContent`),
// spoken by Gemini CLI and the Google Gen AI SDKs: each Content of `contents` is read as one
// message (`model` as assistant), a functionCall part as a tool_use and a functionResponse part
// as its tool_result (paired by id where the parts have one, else by name and order; an id made
// up for the pairing is never written out), and everything else a part or a Content holds
// (thoughtSignature, inline data, an unknown part kind or field) is carried with it. The body is
// written back with only the elements of `contents` replaced, each Content and each part the
// pipeline left alone as the client's own bytes; `systemInstruction`, `tools`, `toolConfig` and
// `generationConfig` are never touched (the first two count in the budget). docs/gemini.md.
#pragma once

#include "wire/wire_format.hpp"

#include <string_view>

namespace compactor::wire {

const WireFormat& gemini();

// Whether an HTTP path belongs to the Gemini API (its conversation routes and the rest:
// countTokens, models, files, cachedContents), so that what serve passes through goes to its
// upstream.
bool is_gemini_api_path(std::string_view path);

}  // namespace compactor::wire
