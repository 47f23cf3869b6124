// NFKC for Claude's legacy meter normalizes only the spans that may change (meter/icu_on_demand):
// checked here against ICU's own whole-text normalizer, on texts built from the code points
// where piecewise normalization could go wrong: starters that combine with what follows,
// combining marks in and out of canonical order, Hangul jamo, compatibility forms that grow.
#include "meter/icu_on_demand.hpp"

#include <gtest/gtest.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <random>
#include <string>
#include <vector>

namespace {

std::string whole_text_nfkc(const std::string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
  std::string out;
  icu::StringByteSink<std::string> sink(&out);
  nfkc->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr, status);
  EXPECT_TRUE(U_SUCCESS(status));
  return out;
}

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) s += static_cast<char>(c);
  else if (c < 0x800) s += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  else if (c < 0x10000)
    s += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  else
    s += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
          static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  return s;
}

// The text after NFKC as the meter sees it: the text itself when nfkc_normalize says it is in NFKC.
std::string ours(const std::string& text) {
  std::string out;
  return compactor::detail::nfkc_normalize(text, out) ? out : text;
}

TEST(Nfkc, OnlyTheSpansThatMayChangeAreNormalizedAndTheResultIsIcusWholeText) {
  EXPECT_EQ(ours("plain ascii"), "plain ascii");
  std::string unchanged = "caf" + utf8(0xE9) + " " + utf8(0x4E2D) + utf8(0x2014);  // é, 中, em dash: NFKC already
  std::string out;
  EXPECT_FALSE(compactor::detail::nfkc_normalize(unchanged, out)) << "no span may change, so ICU is not asked";
  EXPECT_EQ(ours("e" + utf8(0x301)), utf8(0xE9));                          // a starter composes with the mark after it
  EXPECT_EQ(ours("a" + utf8(0x323) + utf8(0x302) + "b"), whole_text_nfkc("a" + utf8(0x323) + utf8(0x302) + "b"));
  EXPECT_EQ(ours(utf8(0x1100) + utf8(0x1161) + utf8(0x11A8)), utf8(0xAC01));  // L V T jamo become one syllable
  EXPECT_EQ(ours(utf8(0xAC00) + utf8(0x11A8)), utf8(0xAC01));                 // LV syllable + T

  const std::vector<char32_t> pool = {
      'a', 'e', 'o', ' ', '1', '.',                       // ASCII starters (combine with marks after them)
      0x300, 0x301, 0x302, 0x323, 0x327, 0x344, 0x308,   // combining marks, several classes
      0xE9, 0xC5, 0x212B, 0x1E9B,                         // composed forms; Angstrom sign; long s with dot
      0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01,             // Hangul L, V, T jamo and syllables
      0xFB01, 0xFF11, 0x2460, 0x2026, 0xA0, 0x2126,       // ﬁ, full-width 1, ①, …, no-break space, Ohm sign
      0xFDFA, 0x3300, 0x1F600, 0x4E2D, 0x2014, 0x309A,    // growing forms, emoji, CJK, em dash, kana voicing
      0x304B, 0x0CCB, 0x0CC6, 0x0CC2, 0x0CD5,             // kana ka; Kannada vowel signs that compose
  };
  std::mt19937 random(17);
  std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1), length(1, 12);
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    for (std::size_t n = length(random); n > 0; --n) text += utf8(pool[pick(random)]);
    ASSERT_EQ(ours(text), whole_text_nfkc(text)) << "text #" << i;
  }
}

}  // namespace
