#include "compactor/size_unit.hpp"

#include <cstring>

namespace compactor {

std::string_view to_string(SizeUnit unit) {
  switch (unit) {
    case SizeUnit::chars: return "chars";
    case SizeUnit::bytes: return "bytes";
    case SizeUnit::tokens: return "tokens";
  }
  return "?";
}

std::optional<SizeUnit> size_unit_from_string(std::string_view text) {
  if (text == "chars") return SizeUnit::chars;
  if (text == "bytes") return SizeUnit::bytes;
  if (text == "tokens") return SizeUnit::tokens;
  return std::nullopt;
}

std::uint64_t count_code_points(std::string_view utf8) {
  // Every byte that is not a continuation byte (10xxxxxx) starts a code point. Eight bytes at a
  // time: a continuation byte has bit 7 set and bit 6 clear. This runs on every message.
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  std::uint64_t continuation = 0;
  std::size_t i = 0;
  for (; i + 8 <= utf8.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, utf8.data() + i, 8);
    // One bit per continuation byte moved to bit 0 of its byte; the multiply sums the bytes
    // into the top byte (at most 8, so no carry), without needing a popcount instruction.
    std::uint64_t marks = (w & ~(w << 1) & kHigh) >> 7;
    continuation += (marks * 0x0101010101010101ULL) >> 56;
  }
  for (; i < utf8.size(); ++i) continuation += (static_cast<unsigned char>(utf8[i]) & 0xC0) == 0x80;
  return utf8.size() - continuation;
}

}  // namespace compactor
