#include "host/native_context.hpp"

#include "model/json_scanner.hpp"

#include <boost/json.hpp>

namespace compactor {

namespace {

namespace json = boost::json;

// The type of an edit that makes room in the context, or empty.
std::string_view room_making(const json::value& edit) {
  const json::object* o = edit.if_object();
  const json::value* type = o != nullptr ? o->if_contains("type") : nullptr;
  if (type == nullptr || !type->is_string()) return {};
  std::string_view t = type->get_string();
  return t.starts_with("compact") || t.starts_with("clear_tool_uses") ? t : std::string_view();
}

}  // namespace

std::string native_context_management(std::string_view body) {
  const std::size_t start = body.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || body[start] != '{') return "";
  auto span = detail::find_value_span(body, {{"context_management"}});
  if (!span) return "";
  boost::system::error_code ec;
  json::value v = detail::parse_json(body.substr(span->begin, span->end - span->begin), ec);
  if (ec) return "";
  // Anthropic: {"edits": [{"type": "compact_20260112", …}, …]}; OpenAI Responses: [{"type": "compaction", …}].
  const json::array* edits = v.if_array();
  if (const json::object* o = v.if_object(); o != nullptr)
    if (const json::value* e = o->if_contains("edits")) edits = e->if_array();
  if (edits == nullptr) return "";
  for (const json::value& edit : *edits)
    if (std::string_view type = room_making(edit); !type.empty())
      return "the request asks the API to make room itself (context_management: " + std::string(type) + ")";
  return "";
}

}  // namespace compactor
