#include "compactor/violation.hpp"

namespace compactor {

namespace {

// One line whatever the text holds: control characters become escapes (a request excerpt may
// hold newlines, a plugin's message anything).
void append_escaped(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
}

}  // namespace

Violation Violation::of(std::string_view checker, std::string what) {
  Violation v;
  v.checker = std::string(checker);
  v.what = std::move(what);
  return v;
}

Violation Violation::at(std::size_t index) && { return std::move(at(index)); }

Violation& Violation::at(std::size_t index) & {
  message_index = index;
  return *this;
}

Violation Violation::with_ids(std::vector<std::string> tool_use_ids) && { return std::move(with_ids(std::move(tool_use_ids))); }

Violation& Violation::with_ids(std::vector<std::string> tool_use_ids) & {
  ids = std::move(tool_use_ids);
  return *this;
}

std::string Violation::to_string() const {
  std::string out;
  append_escaped(out, checker);
  out += ": ";
  if (message_index) out += "messages." + std::to_string(*message_index) + ": ";
  append_escaped(out, what);
  return out;
}

}  // namespace compactor
