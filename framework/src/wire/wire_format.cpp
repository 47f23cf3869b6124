#include "wire/wire_format.hpp"

#include "wire/anthropic_messages.hpp"
#include "wire/gemini.hpp"
#include "wire/openai_chat.hpp"
#include "wire/openai_responses.hpp"

namespace compactor::wire {

const std::vector<const WireFormat*>& wire_formats() {
  static const std::vector<const WireFormat*> formats = {&anthropic_messages(), &openai_chat(), &openai_responses(), &gemini()};
  return formats;
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
