// Reading a log's JSON values, as every importer does: a block's type, a string member that may be
// missing, and a value quoted for a one-line error.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace compactor::logs {

// Whether `block` is an object whose "type" is `type`.
bool is_type(const boost::json::value& block, std::string_view type);

// The string member `key`, or empty when it is missing or not a string.
std::string string_field(const boost::json::object& o, std::string_view key);
std::string string_field(const boost::json::value& v, std::string_view key);

// The start of a text for a one-line error: JSON-escaped (newlines, C0 controls), and DEL, the C1
// controls and the Unicode line and paragraph separators escaped too, cut at a character
// boundary after about `limit` bytes.
std::string one_line_excerpt(std::string_view text, std::size_t limit);

}  // namespace compactor::logs
