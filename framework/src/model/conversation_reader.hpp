// Parses a conversation from bytes: a messages array, a request body {model, system, tools,
// messages, …}, or JSONL (a message a line). Errors are one line naming the source and the
// place: `in.json:3:14 (byte 40): expected ':' after an object key` or
// `in.json: messages.2: role "system" is not allowed inside messages`.
#pragma once

#include "compactor/conversation.hpp"
#include "compactor/error.hpp"
#include "model/json_scanner.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace compactor {

struct ReadOptions {
  std::string source = "<input>";        // the name errors start with
  unsigned max_depth = detail::kMaxJsonDepth;  // JSON nesting limit
  std::optional<InputFormat> format;    // detected from the bytes when empty
};

Expected<Conversation> read_conversation(std::string bytes, const ReadOptions& options = {});

// Every input is a regular file or standard input, and at most this many bytes: the default,
// or the environment variable's value (a bad value is an error naming the variable).
inline constexpr std::uint64_t kDefaultInputLimit = std::uint64_t{2} << 30;  // 2 GiB
inline constexpr const char* kInputLimitVariable = "COMPACTOR_MAX_INPUT_BYTES";
Expected<std::uint64_t> input_size_limit();

// The bytes of a file, or of standard input for "-"; the error names the path and the errno, or
// says why the input is refused (not a regular file, over the size limit).
Expected<std::string> read_input_bytes(const std::string& path);

// Reads a file ("-" is standard input) and parses it; the source name defaults to the path.
Expected<Conversation> read_conversation_file(const std::string& path, ReadOptions options = {});

}  // namespace compactor
