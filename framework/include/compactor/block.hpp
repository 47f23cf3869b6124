// Typed, read-only view of one content block of a message. The JSON it points into is owned by
// the Message; a Block never outlives it. Blocks Compactor has no rule for are kind `other` and
// pass through untouched.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string_view>

namespace compactor {

enum class BlockKind {
  text,
  image,
  document,
  tool_use,
  tool_result,
  thinking,
  redacted_thinking,
  server_tool_use,     // server_tool_use, mcp_tool_use: answered inside the same assistant turn
  server_tool_result,  // web_search_tool_result, mcp_tool_result, … (any "*_tool_result" but tool_result)
  other,
};

BlockKind block_kind_from_type(std::string_view type);

class Block {
 public:
  // A block of a message whose content is a plain string: one text block.
  static Block string_content(std::string_view text) { return Block(BlockKind::text, nullptr, text); }
  static Block from_object(const boost::json::object& object);

  BlockKind kind() const { return kind_; }
  // The JSON object; null for the text of string content.
  const boost::json::object* json() const { return object_; }
  std::string_view type() const;

  // text blocks (and string content)
  std::string_view text() const { return text_; }
  // tool_use / server_tool_use: id and name; empty when absent or not a string.
  std::string_view id() const { return string_field("id"); }
  std::string_view name() const { return string_field("name"); }
  const boost::json::value* input() const { return field("input"); }
  bool has_id() const;
  // tool_result / server_tool_result
  std::string_view tool_use_id() const { return string_field("tool_use_id"); }
  bool is_error() const;
  const boost::json::value* content() const { return field("content"); }
  // thinking / redacted_thinking
  std::string_view thinking() const { return string_field("thinking"); }
  std::string_view signature() const { return string_field("signature"); }

  const boost::json::value* field(std::string_view key) const;
  std::string_view string_field(std::string_view key) const;

 private:
  Block(BlockKind kind, const boost::json::object* object, std::string_view text)
      : kind_(kind), object_(object), text_(text) {}

  BlockKind kind_;
  const boost::json::object* object_;
  std::string_view text_;
};

}  // namespace compactor
