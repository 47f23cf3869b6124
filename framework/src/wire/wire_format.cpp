#include "wire/wire_format.hpp"

#include "wire/anthropic/anthropic_messages.hpp"
#include "wire/gemini/gemini.hpp"
#include "wire/openai_chat/openai_chat.hpp"
#include "wire/openai_responses/openai_responses.hpp"

#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace compactor::wire {

namespace {

std::vector<const WireFormat*>& registry() {
  static std::vector<const WireFormat*> formats = {&anthropic_messages(), &openai_chat(), &openai_responses(), &gemini()};
  return formats;
}

}  // namespace

std::string WireFormat::model_named_in(std::string_view body) const {
  const std::size_t start = body.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || body[start] != '{') return "";
  auto span = detail::find_value_span(body, {{"model"}});
  if (!span || span->end - span->begin > 512 || body[span->begin] != '"') return "";
  boost::system::error_code ec;
  boost::json::value v = detail::parse_json(body.substr(span->begin, span->end - span->begin), ec);
  return !ec && v.is_string() ? std::string(v.get_string()) : std::string();
}

const std::vector<const WireFormat*>& wire_formats() { return registry(); }

void register_wire_format(const WireFormat& format) { registry().push_back(&format); }

std::vector<std::string> upstream_keys() {
  std::vector<std::string> keys;
  for (const WireFormat* f : wire_formats())
    if (std::find(keys.begin(), keys.end(), f->upstream_key()) == keys.end()) keys.emplace_back(f->upstream_key());
  return keys;
}

const WireFormat* wire_format_for(std::string_view method, std::string_view path) {
  for (const WireFormat* f : wire_formats())
    if (f->handles(method, path)) return f;
  return nullptr;
}

const WireFormat* wire_format_owning(std::string_view method, std::string_view path) {
  for (const WireFormat* f : wire_formats())
    if (f->owns(method, path)) return f;
  return nullptr;
}

const WireFormat* wire_format_named(std::string_view name) {
  for (const WireFormat* f : wire_formats())
    if (f->name() == name) return f;
  return nullptr;
}

}  // namespace compactor::wire
