// Building an edited copy of one message: the only JSON a stage copies is the message it edits.
#pragma once

#include "compactor/message.hpp"

#include <boost/json/value.hpp>
#include <string>
#include <utility>
#include <vector>

namespace compactor {

// The message with the content of some of its tool_result blocks replaced; every other field of
// those blocks (tool_use_id, is_error, cache_control…) and every other block stays as it was.
// `replacements` are (block index, new content) pairs; an index that is not a tool_result is an
// error.
Expected<MessagePtr> with_result_contents(const Message& message,
                                          std::vector<std::pair<std::size_t, boost::json::value>> replacements);

// The message with the text of some of its text blocks replaced; every other field of those blocks
// (cache_control, citations…) and every other block stays as it was. `replacements` are (block
// index, new text) pairs; a message whose content is a string has one text block, index 0, and
// keeps string content. An index that is not a text block is an error. Archive the whole message
// first (`archive.put(message.raw())`) and name the receipt in the new text: that is what the
// `archived` checker looks for when a text block changes.
Expected<MessagePtr> with_texts(const Message& message, std::vector<std::pair<std::size_t, std::string>> replacements);

// The exact bytes of field `key` of block `block` as this message is written (its input bytes
// when untouched): what the archive keeps when that field is removed. Empty when absent.
std::string_view raw_block_field(const Message& message, std::size_t block, std::string_view key);

// Code points of a tool_result's content as the model reads it: a string's own characters, or
// the compact JSON of a list (images counted at kMediaBlockSize).
std::uint64_t result_content_chars(const Block& tool_result);

}  // namespace compactor
