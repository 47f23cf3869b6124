#include "import/log_json.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <fmt/core.h>

#include <algorithm>

namespace compactor::logs {

namespace json = boost::json;

bool is_type(const json::value& block, std::string_view type) {
  if (!block.is_object()) return false;
  auto it = block.get_object().find("type");
  return it != block.get_object().end() && it->value().is_string() && it->value().get_string() == type;
}

std::string string_field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
}

std::string string_field(const json::value& v, std::string_view key) {
  return v.is_object() ? string_field(v.get_object(), key) : std::string();
}

std::string one_line_excerpt(std::string_view text, std::size_t limit) {
  std::size_t cut = std::min(text.size(), limit);
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string quoted = json::serialize(json::string(text.substr(0, cut)));
  std::string out;
  out.reserve(quoted.size());
  for (std::size_t i = 0; i < quoted.size(); ++i) {
    auto byte = [&](std::size_t k) { return k < quoted.size() ? static_cast<unsigned char>(quoted[k]) : 0u; };
    if (byte(i) == 0x7F) {
      out += "\\u007f";
    } else if (byte(i) == 0xC2 && byte(i + 1) >= 0x80 && byte(i + 1) <= 0x9F) {  // U+0080..U+009F
      out += fmt::format("\\u{:04x}", byte(i + 1));
      ++i;
    } else if (byte(i) == 0xE2 && byte(i + 1) == 0x80 && (byte(i + 2) == 0xA8 || byte(i + 2) == 0xA9)) {  // U+2028, U+2029
      out += byte(i + 2) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += quoted[i];
    }
  }
  return out + (cut < text.size() ? "…" : "");
}

}  // namespace compactor::logs
