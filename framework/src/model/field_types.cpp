#include "model/field_types.hpp"

#include "compactor/block.hpp"

namespace compactor::detail {
namespace {

enum Need { optional, required };

struct Fields {
  const boost::json::object& block;
  const std::string& where;
  std::vector<std::string>& out;

  const boost::json::value* get(std::string_view key, Need need, const char* expected) {
    auto it = block.find(key);
    if (it == block.end()) {
      if (need == required) out.push_back(where + " has no \"" + std::string(key) + "\" (" + expected + ")");
      return nullptr;
    }
    return &it->value();
  }
  void wrong(std::string_view key, const char* expected, const boost::json::value& v) {
    out.push_back(where + "." + std::string(key) + " must be " + expected + ", got " + std::string(json_kind(v)));
  }
  void string(std::string_view key, Need need) {
    if (auto v = get(key, need, "a string"); v && !v->is_string()) wrong(key, "a string", *v);
  }
  void boolean(std::string_view key) {
    if (auto v = get(key, optional, "a boolean"); v && !v->is_bool()) wrong(key, "a boolean", *v);
  }
  void object(std::string_view key, Need need) {
    if (auto v = get(key, need, "an object"); v && !v->is_object()) wrong(key, "an object", *v);
  }
  void object_or_null(std::string_view key) {
    if (auto v = get(key, optional, "an object"); v && !v->is_object() && !v->is_null()) wrong(key, "an object or null", *v);
  }
};

}  // namespace

boost::json::object foreign_members(const boost::json::object& o, std::initializer_list<std::string_view> known) {
  boost::json::object out;
  for (const auto& kv : o) {
    bool is_known = false;
    for (std::string_view k : known) is_known |= kv.key() == k;
    if (!is_known) out.emplace(kv.key(), kv.value());
  }
  return out;
}

std::string_view json_kind(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: return "null";
    case boost::json::kind::bool_: return "boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_: return "number";
    case boost::json::kind::string: return "string";
    case boost::json::kind::array: return "array";
    case boost::json::kind::object: return "object";
  }
  return "value";
}

void block_field_problems(const boost::json::object& block, const std::string& where, std::vector<std::string>& out) {
  auto type = block.find("type");
  if (type == block.end()) {
    out.push_back(where + ": block has no \"type\"");
    return;
  }
  if (!type->value().is_string()) {
    out.push_back(where + ".type must be a string, got " + std::string(json_kind(type->value())));
    return;
  }
  Fields f{block, where, out};
  f.object_or_null("cache_control");
  // tool_use and server tool ids, names and inputs are the pairing and unique_ids checkers' rules.
  switch (block_kind_from_type(type->value().get_string())) {
    case BlockKind::text:
      f.string("text", required);
      if (auto v = f.get("citations", optional, ""); v && !v->is_array() && !v->is_null())
        f.wrong("citations", "an array or null", *v);
      break;
    case BlockKind::image:
    case BlockKind::document:
      f.object("source", required);
      break;
    case BlockKind::thinking:
      f.string("thinking", required);
      f.string("signature", optional);
      break;
    case BlockKind::redacted_thinking:
      f.string("data", required);
      break;
    case BlockKind::tool_result: {
      f.string("tool_use_id", required);
      f.boolean("is_error");
      const boost::json::value* content = f.get("content", optional, "");
      if (content == nullptr || content->is_string()) break;
      if (!content->is_array()) {
        f.wrong("content", "a string or an array of blocks", *content);
        break;
      }
      const auto& inner = content->get_array();
      for (std::size_t i = 0; i < inner.size(); ++i) {
        std::string at = where + ".content." + std::to_string(i);
        if (!inner[i].is_object()) out.push_back(at + " must be an object, got " + std::string(json_kind(inner[i])));
        else block_field_problems(inner[i].get_object(), at, out);
      }
      break;
    }
    case BlockKind::server_tool_result:
      f.string("tool_use_id", required);
      break;
    default: break;
  }
}

void system_field_problems(const boost::json::value& system, std::vector<std::string>& out) {
  if (system.is_string()) return;
  if (!system.is_array()) {
    out.push_back("system must be a string or an array of text blocks, got " + std::string(json_kind(system)));
    return;
  }
  const auto& blocks = system.get_array();
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    std::string at = "system." + std::to_string(i);
    if (!blocks[i].is_object()) {
      out.push_back(at + " must be a text block, got " + std::string(json_kind(blocks[i])));
      continue;
    }
    const auto& b = blocks[i].get_object();
    auto type = b.find("type");
    if (type == b.end() || !type->value().is_string() || type->value().get_string() != "text")
      out.push_back(at + " must be a text block (\"type\": \"text\")");
    else
      block_field_problems(b, at, out);
  }
}

void tools_field_problems(const boost::json::value& tools, std::vector<std::string>& out) {
  if (!tools.is_array()) {
    out.push_back("tools must be an array of tool definitions, got " + std::string(json_kind(tools)));
    return;
  }
  const auto& list = tools.get_array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = "tools." + std::to_string(i);
    if (!list[i].is_object()) {
      out.push_back(at + " must be an object, got " + std::string(json_kind(list[i])));
      continue;
    }
    Fields f{list[i].get_object(), at, out};
    f.string("name", required);
    f.string("description", optional);
    f.object_or_null("cache_control");
    // Client tools declare input_schema; server tools (web_search, bash, …) have a type instead.
    if (list[i].get_object().contains("input_schema")) f.object("input_schema", required);
  }
}

}  // namespace compactor::detail
