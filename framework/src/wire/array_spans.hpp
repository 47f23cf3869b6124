// The byte spans of one top-level array member of a JSON object (`"messages": [...]`): where the
// array opens and closes and each element's exact bytes, found by a scan over bytes already
// parsed (so only spans are found, no value is built). What lets an adapter write a body back
// with only that array's elements replaced and everything else as the client sent it.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace compactor::wire {

struct ArraySpans {
  std::size_t open = 0, close = 0;  // the '[' and the ']'
  std::vector<std::string_view> items;
};

// Nothing when `body` is not an object with such an array member. A later duplicate key wins, as
// in a parse.
std::optional<ArraySpans> array_member_spans(std::string_view body, std::string_view key);

// An adapter reads a bare array as the body `{"key":` + array + `}`. True when these spans are
// that array and it was all the client sent (only whitespace around it): bytes after it would
// otherwise be read as members of the made-up body and written back as they came, not JSON.
bool is_whole_bare_array(const ArraySpans& spans, std::string_view wrapped, std::size_t prefix_size);

}  // namespace compactor::wire
