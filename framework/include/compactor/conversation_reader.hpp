// Parses a conversation from bytes: a messages array, a request body {model, system, tools,
// messages, …}, or JSONL (a message a line). Errors are one line naming the source and the
// place: `in.json:3:14 (byte 40): expected ':' after an object key` or
// `in.json: messages.2: role "system" is not allowed inside messages`.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"

#include <optional>
#include <string>

namespace compactor {

struct ReadOptions {
  std::string source = "<input>";        // the name errors start with
  unsigned max_depth = 256;             // JSON nesting limit (Boost.JSON's own default is 32)
  std::optional<InputFormat> format;    // detected from the bytes when empty
};

Expected<Conversation> read_conversation(std::string bytes, const ReadOptions& options = {});

// The bytes of a file, or of standard input for "-"; the error names the path and the errno.
Expected<std::string> read_input_bytes(const std::string& path);

// Reads a file ("-" is standard input) and parses it; the source name defaults to the path.
Expected<Conversation> read_conversation_file(const std::string& path, ReadOptions options = {});

}  // namespace compactor
