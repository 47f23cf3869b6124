#include "wire/array_spans.hpp"

#include <string>

namespace compactor::wire {

std::optional<ArraySpans> array_member_spans(std::string_view body, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  std::size_t p = 0;
  auto space = [&] {
    while (p < body.size() && (body[p] == ' ' || body[p] == '\n' || body[p] == '\r' || body[p] == '\t')) ++p;
  };
  auto skip_string = [&] {  // at the opening quote; after it, past the closing one
    for (++p; p < body.size(); ++p) {
      if (body[p] == '\\') ++p;
      else if (body[p] == '"') {
        ++p;
        return true;
      }
    }
    return false;
  };
  auto skip_value = [&] {
    space();
    if (p >= body.size()) return false;
    if (body[p] == '"') return skip_string();
    if (body[p] == '{' || body[p] == '[') {
      int depth = 0;
      while (p < body.size()) {
        char c = body[p];
        if (c == '"') {
          if (!skip_string()) return false;
          continue;
        }
        if (c == '{' || c == '[') ++depth;
        else if ((c == '}' || c == ']') && --depth == 0) {
          ++p;
          return true;
        }
        ++p;
      }
      return false;
    }
    while (p < body.size() && body[p] != ',' && body[p] != '}' && body[p] != ']' && body[p] != ' ' && body[p] != '\n' &&
           body[p] != '\r' && body[p] != '\t')
      ++p;
    return true;
  };
  std::optional<ArraySpans> found;
  space();
  if (p >= body.size() || body[p] != '{') return std::nullopt;
  ++p;
  for (;;) {
    space();
    if (p >= body.size()) return std::nullopt;
    if (body[p] == '}') return found;
    if (body[p] == ',') {
      ++p;
      continue;
    }
    if (body[p] != '"') return std::nullopt;
    std::size_t key_at = p;
    if (!skip_string()) return std::nullopt;
    bool is_key = body.substr(key_at, p - key_at) == quoted;
    space();
    if (p >= body.size() || body[p] != ':') return std::nullopt;
    ++p;
    space();
    if (!is_key || p >= body.size() || body[p] != '[') {
      if (!skip_value()) return std::nullopt;
      continue;
    }
    ArraySpans spans;
    spans.open = p++;
    for (;;) {
      space();
      if (p >= body.size()) return std::nullopt;
      if (body[p] == ']') break;
      if (body[p] == ',') {
        ++p;
        continue;
      }
      std::size_t start = p;
      if (!skip_value()) return std::nullopt;
      spans.items.push_back(body.substr(start, p - start));
    }
    spans.close = p++;
    found = std::move(spans);
  }
}

bool is_whole_bare_array(const ArraySpans& spans, std::string_view wrapped, std::size_t prefix_size) {
  constexpr std::string_view kSpace = " \t\r\n";
  return spans.open == wrapped.find_first_not_of(kSpace, prefix_size) && !wrapped.empty() &&
         wrapped.find_first_not_of(kSpace, spans.close + 1) == wrapped.size() - 1;
}

}  // namespace compactor::wire
