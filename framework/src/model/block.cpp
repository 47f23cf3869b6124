#include "compactor/block.hpp"

namespace compactor {

BlockKind block_kind_from_type(std::string_view type) {
  if (type == "text") return BlockKind::text;
  if (type == "tool_use") return BlockKind::tool_use;
  if (type == "tool_result") return BlockKind::tool_result;
  if (type == "thinking") return BlockKind::thinking;
  if (type == "redacted_thinking") return BlockKind::redacted_thinking;
  if (type == "image") return BlockKind::image;
  if (type == "document") return BlockKind::document;
  if (type == "server_tool_use" || type == "mcp_tool_use") return BlockKind::server_tool_use;
  constexpr std::string_view suffix = "_tool_result";
  if (type.size() > suffix.size() && type.substr(type.size() - suffix.size()) == suffix)
    return BlockKind::server_tool_result;
  return BlockKind::other;
}

Block Block::from_object(const boost::json::object& object) {
  std::string_view type;
  if (auto it = object.find("type"); it != object.end() && it->value().is_string()) type = it->value().get_string();
  BlockKind kind = block_kind_from_type(type);
  std::string_view text;
  if (kind == BlockKind::text) {
    if (auto it = object.find("text"); it != object.end() && it->value().is_string()) text = it->value().get_string();
  }
  return Block(kind, &object, text);
}

std::string_view Block::type() const {
  if (object_ == nullptr) return "text";
  return string_field("type");
}

const boost::json::value* Block::field(std::string_view key) const {
  if (object_ == nullptr) return nullptr;
  auto it = object_->find(key);
  return it == object_->end() ? nullptr : &it->value();
}

std::string_view Block::string_field(std::string_view key) const {
  const boost::json::value* v = field(key);
  return (v != nullptr && v->is_string()) ? std::string_view(v->get_string()) : std::string_view();
}

bool Block::has_id() const {
  const boost::json::value* v = field("id");
  return v != nullptr && v->is_string();
}

bool Block::is_error() const {
  const boost::json::value* v = field("is_error");
  return v != nullptr && v->is_bool() && v->get_bool();
}

}  // namespace compactor
