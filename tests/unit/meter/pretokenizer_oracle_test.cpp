// The hand-written pre-tokenizer against the published split patterns run by ICU's regex engine
// (the oracle): the same pieces on random strings built from every character class the patterns
// distinguish, and on real session text.
#include "meter/pretokenizer.hpp"

#include <gtest/gtest.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <fstream>
#include <random>
#include <sstream>

namespace compactor::detail {
namespace {

std::vector<std::string> oracle_pieces(const icu::RegexPattern& pattern, const std::string& text) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(pattern.matcher(u, status));
  std::vector<std::string> out;
  int32_t expected_start = 0;
  while (U_SUCCESS(status) && m->find(status)) {
    int32_t start = m->start(status), end = m->end(status);
    EXPECT_EQ(start, expected_start) << "the pattern skipped text";
    std::string piece;
    u.tempSubStringBetween(start, end).toUTF8String(piece);
    out.push_back(piece);
    expected_start = end;
  }
  EXPECT_TRUE(U_SUCCESS(status));
  return out;
}

std::vector<std::string> our_pieces(SplitPattern p, std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = next_piece_end(p, text, pos);
    EXPECT_GT(end, pos);
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::unique_ptr<icu::RegexPattern> compile(SplitPattern p) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError error;
  auto regex = split_pattern_regex(p);
  std::unique_ptr<icu::RegexPattern> compiled(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(icu::StringPiece(regex.data(), static_cast<int32_t>(regex.size()))), error, status));
  EXPECT_TRUE(U_SUCCESS(status)) << u_errorName(status);
  return compiled;
}

// Characters of every class the patterns tell apart, and the ones they treat specially.
const std::vector<std::string> kAlphabet = {
    "a", "b", "s", "t", "l", "v", "e", "r", "d", "m", "S", "T", "L", "E", "R", "D", "M", "Z",
    "'", " ", " ", " ", "\t", "\n", "\r", "\v", "\f", "/", ".", ",", "(", "#", "0", "1", "9",
    "\xC5\xBF",          // ſ U+017F (Ll; 's case-folds to it)
    "\xC3\xA9",          // é Ll
    "\xC3\x89",          // É Lu
    "\xC7\x85",          // ǅ Lt
    "\xCA\xB0",          // ʰ Lm
    "\xE4\xB8\xAD",      // 中 Lo
    "\xCC\x81",          // combining acute Mn
    "\xE0\xA4\x83",      // ः Mc
    "\xC2\xBD",          // ½ No
    "\xE2\x85\xA0",      // Ⅰ Nl
    "\xD9\xA3",          // ٣ Nd
    "\xC2\xA0",          // no-break space (Zs)
    "\xC2\x85",          // NEL: White_Space but no class letter
    "\xE2\x80\xA8",      // line separator
    "\xE3\x80\x80",      // ideographic space
    "\xEF\xBB\xBF",      // BOM: not White_Space
    "\xF0\x9F\x98\x8A",  // 😊 So
};

class PretokenizerOracle : public ::testing::TestWithParam<SplitPattern> {};

TEST_P(PretokenizerOracle, RandomStringsSplitAsTheRegexDoes) {
  auto pattern = compile(GetParam());
  ASSERT_TRUE(pattern);
  std::mt19937 rng(20261130);
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    int length = static_cast<int>(rng() % 24);
    for (int k = 0; k < length; ++k) text += kAlphabet[rng() % kAlphabet.size()];
    ASSERT_EQ(our_pieces(GetParam(), text), oracle_pieces(*pattern, text)) << "text: " << text;
  }
}

TEST_P(PretokenizerOracle, RealSessionTextSplitsAsTheRegexDoes) {
  auto pattern = compile(GetParam());
  ASSERT_TRUE(pattern);
  std::ifstream in(std::string(COMPACTOR_TEST_DATA_DIR) + "/cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json");
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  ASSERT_GT(text.size(), 100000u);
  // In chunks cut at line ends, so that each is valid UTF-8.
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', std::min(text.size(), pos + 20000));
    end = end == std::string::npos ? text.size() : end + 1;
    std::string chunk = text.substr(pos, end - pos);
    ASSERT_EQ(our_pieces(GetParam(), chunk), oracle_pieces(*pattern, chunk)) << "at byte " << pos;
    pos = end;
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, PretokenizerOracle,
                         ::testing::Values(SplitPattern::cl100k, SplitPattern::o200k, SplitPattern::gpt2),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case SplitPattern::cl100k: return std::string("cl100k");
                             case SplitPattern::o200k: return std::string("o200k");
                             case SplitPattern::gpt2: return std::string("gpt2");
                           }
                           return std::string("unknown");
                         });

}  // namespace
}  // namespace compactor::detail
