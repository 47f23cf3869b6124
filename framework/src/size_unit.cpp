#include "compactor/size_unit.hpp"

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
  // Every byte that is not a continuation byte (10xxxxxx) starts a code point.
  std::uint64_t continuation = 0;
  for (char c : utf8) continuation += (static_cast<unsigned char>(c) & 0xC0) == 0x80;
  return utf8.size() - continuation;
}

}  // namespace compactor
