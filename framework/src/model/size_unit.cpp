#include "compactor/size_unit.hpp"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
  // Every byte that is not a continuation byte (10xxxxxx) starts a code point. This runs on every
  // message, so it counts 16 bytes at a time where SSE2 is there (every x86-64): as signed bytes,
  // continuation bytes are exactly those below -64. Each lane counts at most 255 blocks before
  // the lanes are summed, so no lane overflows.
  std::uint64_t continuation = 0;
  std::size_t i = 0;
  const char* data = utf8.data();
  const std::size_t size = utf8.size();
#if defined(__SSE2__)
  const __m128i below = _mm_set1_epi8(-64);
  while (size - i >= 16) {
    const std::size_t blocks = std::min<std::size_t>((size - i) / 16, 255);
    __m128i lanes = _mm_setzero_si128();
    for (std::size_t b = 0; b < blocks; ++b, i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
      lanes = _mm_sub_epi8(lanes, _mm_cmpgt_epi8(below, v));  // a match is -1
    }
    __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
    continuation += static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums)) +
                    static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#else
  // Eight bytes at a time: a continuation byte has bit 7 set and bit 6 clear; the multiply sums
  // one bit per byte into the top byte (at most 8, so no carry).
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, data + i, 8);
    std::uint64_t marks = (w & ~(w << 1) & kHigh) >> 7;
    continuation += (marks * 0x0101010101010101ULL) >> 56;
  }
#endif
  for (; i < size; ++i) continuation += (static_cast<unsigned char>(data[i]) & 0xC0) == 0x80;
  return size - continuation;
}

}  // namespace compactor
