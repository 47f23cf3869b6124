// An answer the server writes itself (not the upstream's): status, headers and a whole body.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace compactor::serve {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  Headers headers;
};

// A header value kept to one line of at most 300 chars (a warning quotes an error).
std::string header_safe(std::string text);

// The value of a header (names compared case-insensitively), or empty.
std::string_view header_value(const Headers& headers, std::string_view name);

}  // namespace compactor::serve
