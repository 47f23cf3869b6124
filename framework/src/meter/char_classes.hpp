// The Unicode classes the split patterns of cl100k_base, o200k_base and Claude's legacy tokenizer
// ask about, one byte per code point, read from ICU when Compactor is built. The patterns' `\s` is Unicode
// White_Space, as in the Rust regex crate tiktoken uses (not ICU's `\s`, which lacks U+000B and
// U+0085, nor JavaScript's, which adds U+FEFF).
#pragma once

#include <cstdint>
#include <string_view>

namespace compactor::detail {

enum CharClass : std::uint8_t {
  kLetter = 1,      // \p{L}
  kUpperish = 2,    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]  (o200k)
  kLowerish = 4,    // [\p{Ll}\p{Lm}\p{Lo}\p{M}]        (o200k)
  kNumber = 8,      // \p{N}
  kSpace = 16,      // \s
  kNewline = 32,    // [\r\n]
  kMark = 64,       // \p{M}
  kNfkcMayChange = 128,  // not NFKC_QC=Yes, or not a starter: NFKC may change a text holding it
};

// The classes of every code point (0x110000 entries), built on first use from runs generated at
// build time (framework/tools/char_class_gen.cpp reads them from ICU).
const std::uint8_t* char_class_table();

// Decodes the code point at `pos` of valid UTF-8; returns its length in bytes (1 for a stray
// byte, which then counts as a code point with no class).
inline std::uint32_t decode_utf8(std::string_view s, std::size_t pos, std::uint32_t& cp) {
  auto b = static_cast<unsigned char>(s[pos]);
  if (b < 0x80) {
    cp = b;
    return 1;
  }
  auto cont = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[pos + i]) & 0x3F); };
  if ((b & 0xE0) == 0xC0 && pos + 1 < s.size()) {
    cp = ((b & 0x1Fu) << 6) | cont(1);
    return 2;
  }
  if ((b & 0xF0) == 0xE0 && pos + 2 < s.size()) {
    cp = ((b & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
    return 3;
  }
  if ((b & 0xF8) == 0xF0 && pos + 3 < s.size()) {
    cp = ((b & 0x07u) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
    if (cp > 0x10FFFF) cp = 0xFFFD;
    return 4;
  }
  cp = 0xFFFD;
  return 1;
}

}  // namespace compactor::detail
