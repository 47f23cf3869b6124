#include "serve/upstream_head.hpp"

#include <fmt/core.h>

namespace compactor::serve {
namespace {

// RFC 9110's tchar: what a field name is made of.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_ows(char c) { return c == ' ' || c == '\t'; }

// "HTTP/1.1 200 OK", "HTTP/2 200": the three digits after the version, 100 to 599; else 0.
int status_of(std::string_view line) {
  const std::size_t sp = line.find(' ');
  if (!line.starts_with("HTTP/") || sp == std::string_view::npos || line.size() < sp + 4) return 0;
  const std::string_view code = line.substr(sp + 1, 3);
  if (line.size() > sp + 4 && line[sp + 4] != ' ') return 0;
  int value = 0;
  for (char c : code) {
    if (c < '0' || c > '9') return 0;
    value = value * 10 + (c - '0');
  }
  return value >= 100 && value <= 599 ? value : 0;
}

}  // namespace

UpstreamHead::Step UpstreamHead::refuse(std::string why) {
  refusal_ = std::move(why);
  return Step::refused;
}

UpstreamHead::Step UpstreamHead::line(std::string_view raw) {
  if (!refusal_.empty()) return Step::refused;
  bytes_ += raw.size();
  if (bytes_ > kMaxBytes)
    return refuse(fmt::format("the upstream's answer head is over {} bytes, serve's limit", kMaxBytes));
  std::string_view line = raw;
  if (line.ends_with('\n')) line.remove_suffix(1);
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (!seen_status_) {
    status_ = status_of(line);
    if (status_ == 0) return refuse("the upstream's answer has no valid status line");
    seen_status_ = true;
    fields_.clear();
    return Step::more;
  }
  if (line.empty()) {
    if (status_ >= 200) return Step::complete;
    seen_status_ = false;  // an interim answer (100 Continue, 103 Early Hints): the real one follows
    return Step::more;
  }
  const std::size_t colon = line.find(':');
  std::size_t name_end = 0;
  while (name_end < line.size() && is_tchar(line[name_end])) ++name_end;
  if (colon == std::string_view::npos || colon == 0 || name_end != colon)
    return refuse("the upstream's answer head has a line that is no field (a folded or malformed line)");
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && is_ows(value.front())) value.remove_prefix(1);
  while (!value.empty() && is_ows(value.back())) value.remove_suffix(1);
  // RFC 9110: a value is visible characters, spaces, tabs and obs-text; a control character
  // (CR, LF and NUL among them) could end the field where the client reads it.
  for (char c : value)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
      return refuse(fmt::format("the upstream's answer field {} holds a control character", line.substr(0, colon)));
  fields_.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  return Step::more;
}

}  // namespace compactor::serve
