#include "serve/reply.hpp"

#include <boost/beast/core/string.hpp>

namespace compactor::serve {

std::string header_safe(std::string text) {
  for (char& c : text)
    if (c == '\r' || c == '\n' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (text.size() > 300) text.resize(300);
  return text;
}

std::string_view header_value(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers)
    if (boost::beast::iequals(k, name)) return v;
  return {};
}

}  // namespace compactor::serve
