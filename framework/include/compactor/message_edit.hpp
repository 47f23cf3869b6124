// Building an edited copy of one message: the only JSON a stage copies is the message it edits.
#pragma once

#include "compactor/message.hpp"

#include <boost/json/value.hpp>
#include <utility>
#include <vector>

namespace compactor {

// The message with the content of some of its tool_result blocks replaced; every other field of
// those blocks (tool_use_id, is_error, cache_control…) and every other block stays as it was.
// `replacements` are (block index, new content) pairs; an index that is not a tool_result is an
// error.
Expected<MessagePtr> with_result_contents(const Message& message,
                                          std::vector<std::pair<std::size_t, boost::json::value>> replacements);

// The exact bytes of field `key` of block `block` as this message is written (its input bytes
// when untouched): what the archive keeps when that field is removed. Empty when absent.
std::string_view raw_block_field(const Message& message, std::size_t block, std::string_view key);

// Code points of a tool_result's content as the model reads it: a string's own characters, or
// the compact JSON of a list (images counted at kMediaBlockSize).
std::uint64_t result_content_chars(const Block& tool_result);

}  // namespace compactor
