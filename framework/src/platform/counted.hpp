// A count with its noun for one-line summaries: "1 message", "2 messages".
#pragma once

#include <fmt/core.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace compactor {

inline std::string counted(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace compactor
