// The units a budget is expressed in, and the sizes every message caches.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace compactor {

// chars: Unicode code points of the JSON Compactor writes for a message (an untouched message is
// written from its input bytes, so this is what the API will receive); bytes: UTF-8 bytes of
// the same; tokens: through the configured Meter (compactor/meter.hpp).
enum class SizeUnit { chars, bytes, tokens };

std::string_view to_string(SizeUnit unit);
std::optional<SizeUnit> size_unit_from_string(std::string_view text);

struct Sizes {
  std::uint64_t chars = 0;
  std::uint64_t bytes = 0;
  std::uint64_t tokens = 0;  // 0 unless a meter counted (a conversation with a meter)

  std::uint64_t in(SizeUnit unit) const {
    return unit == SizeUnit::bytes ? bytes : unit == SizeUnit::tokens ? tokens : chars;
  }
  Sizes& operator+=(const Sizes& other) {
    chars += other.chars;
    bytes += other.bytes;
    tokens += other.tokens;
    return *this;
  }
};

// Code points in a UTF-8 string that is already known to be valid.
std::uint64_t count_code_points(std::string_view utf8);

}  // namespace compactor
