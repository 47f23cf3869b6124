// OpenAI chat histories as sessions to import (a messages array, {"messages": […]}, a SWE-agent
// trajectory {"history": […]}), turned into Anthropic messages, and back: the Anthropic form as
// an OpenAI messages array (`import --output-format openai`).
#pragma once

#include "import/importers.hpp"
#include "wire/input_form.hpp"

#include <map>
#include <string>
#include <string_view>

namespace compactor {

// The system message goes to the request body's `system`. A tool call whose arguments are not
// JSON is an error naming the message.
Expected<ImportResult> import_openai(std::string_view bytes, const std::string& source);

// Anthropic → OpenAI chat messages (a JSON array), for `--output-format openai`. The OpenAI form
// carries text, tool calls and the text of tool results; what it has no place for (thinking, an
// image, a document, a result's non-text part…) is left out, each counted in `left_out` when
// given ("thinking blocks" → 9, "image parts of tool results" → 2).
std::string export_openai(const Conversation& conversation, std::map<std::string, std::size_t>* left_out = nullptr);

namespace wire {

// `openai`: a Chat Completions request body or messages array (read by the adapter, every field
// it carries kept), or a history log (a .traj file, or turns under "history"), imported.
const InputForm& openai_form();

}  // namespace wire

}  // namespace compactor
