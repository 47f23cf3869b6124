#include "wire/context_management.hpp"

#include "model/json_scanner.hpp"

#include <boost/json.hpp>

namespace compactor::wire {

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

std::optional<json::value> context_management_of(std::string_view body) {
  const std::size_t start = body.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || body[start] != '{') return std::nullopt;
  auto span = detail::find_value_span(body, {{"context_management"}});
  if (!span) return std::nullopt;
  boost::system::error_code ec;
  json::value v = detail::parse_json(body.substr(span->begin, span->end - span->begin), ec);
  if (ec) return std::nullopt;
  return v;
}

std::string deferral_for(const json::array& edits) {
  for (const json::value& edit : edits)
    if (std::string_view type = room_making(edit); !type.empty())
      return "the request asks the API to make room itself (context_management: " + std::string(type) + ")";
  return "";
}

}  // namespace compactor::wire
