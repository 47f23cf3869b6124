// The exact tokenizers against their references: every vector of gpt-tokenizer's TestPlans.txt
// (generated with OpenAI's tiktoken), round trips, Claude's NFKC and special tokens, and the
// long-piece merge against the short-piece one.
#include "meter/tokenizer.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>
#include <sstream>

namespace compactor {
namespace {

std::shared_ptr<const Tokenizer> load(TokenizerKind kind) {
  auto t = Tokenizer::load(kind, COMPACTOR_METER_DATA_DIR);
  if (!t) ADD_FAILURE() << t.error().message;
  return t ? *t : nullptr;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Vector {
  std::string encoding, sample;
  std::vector<std::uint32_t> encoded;
};

std::vector<Vector> test_plans() {
  std::string text = read_file(COMPACTOR_TOKENIZER_PACKAGES "/gpt-tokenizer/data/TestPlans.txt");
  std::vector<Vector> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find("\n\n", pos);
    std::string block = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 2;
    std::istringstream lines(block);
    std::string name, sample, encoded;
    if (!std::getline(lines, name) || !std::getline(lines, sample) || !std::getline(lines, encoded)) continue;
    Vector v;
    v.encoding = name.substr(name.find(": ") + 2);
    v.sample = sample.substr(sample.find(": ") + 2);
    boost::json::value ids = boost::json::parse(encoded.substr(encoded.find(": ") + 2));
    for (const auto& id : ids.as_array())
      v.encoded.push_back(static_cast<std::uint32_t>(id.as_int64()));
    out.push_back(std::move(v));
  }
  return out;
}

TEST(Tokenizer, ReproducesEveryTestPlanVector) {
  std::map<std::string, std::shared_ptr<const Tokenizer>> tokenizers = {
      {"cl100k_base", load(TokenizerKind::cl100k_base)},
      {"o200k_base", load(TokenizerKind::o200k_base)},
      {"r50k_base", load(TokenizerKind::r50k_base)},
      {"p50k_base", load(TokenizerKind::p50k_base)},
      {"p50k_edit", load(TokenizerKind::p50k_base)},  // p50k_base's ranks plus FIM tokens no vector uses
  };
  std::map<std::string, int> checked;
  for (const Vector& v : test_plans()) {
    auto it = tokenizers.find(v.encoding);
    if (it == tokenizers.end() || !it->second) continue;
    EXPECT_EQ(it->second->encode(v.sample), v.encoded) << v.encoding << ": " << v.sample;
    EXPECT_EQ(it->second->count(v.sample), v.encoded.size());
    ++checked[v.encoding];
  }
  // The file's own counts: a vector silently skipped would hide a regression.
  EXPECT_EQ(checked["cl100k_base"], 64);
  EXPECT_EQ(checked["o200k_base"], 57);
  EXPECT_EQ(checked["r50k_base"], 64);
  EXPECT_EQ(checked["p50k_base"], 64);
  EXPECT_EQ(checked["p50k_edit"], 64);  // all 313 vectors of the file
}

TEST(Tokenizer, DecodeGivesTheTextBack) {
  const std::string text = "Hello, wörld! 123456 'll  \n\n\t x ſ 😊 こんにちは <EOT> \xE2\x80\xA8 end  ";
  for (auto kind : {TokenizerKind::cl100k_base, TokenizerKind::o200k_base, TokenizerKind::r50k_base}) {
    auto t = load(kind);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->decode(t->encode(text)), text) << to_string(kind);
  }
}

TEST(Tokenizer, ClaudeNormalisesNfkcAndKnowsItsSpecialTokens) {
  auto claude = load(TokenizerKind::claude_legacy);
  ASSERT_TRUE(claude);
  // U+FB01 (ﬁ) is "fi" after NFKC; full-width digits are ASCII digits.
  EXPECT_EQ(claude->encode("\xEF\xAC\x81sh \xEF\xBC\x91\xEF\xBC\x92"), claude->encode("fish 12"));
  // NFKC can grow a text past any fixed slack: U+FDFA is one UTF-16 unit and becomes 18
  // ("صلى الله عليه وسلم"), so the normalizer is asked again with the size it reports.
  EXPECT_EQ(claude->encode("x \xEF\xB7\xBA"),
            claude->encode("x \xD8\xB5\xD9\x84\xD9\x89 \xD8\xA7\xD9\x84\xD9\x84\xD9\x87 "
                           "\xD8\xB9\xD9\x84\xD9\x8A\xD9\x87 \xD9\x88\xD8\xB3\xD9\x84\xD9\x85"));
  EXPECT_NE(claude->encode("x \xEF\xB7\xBA"), claude->encode("x \xEF\xB7\xBB"));
  auto ids = claude->encode("a<EOT>b<META_START>");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], 0u);  // <EOT>
  EXPECT_EQ(ids[3], 2u);  // <META_START>, not <META> followed by text
  EXPECT_EQ(claude->decode(ids), "a<EOT>b<META_START>");
  EXPECT_EQ(claude->count(""), 0u);
}

TEST(Tokenizer, LongPiecesMergeLikeTiktoken) {
  // One 1,400-byte piece: over the quadratic-merge limit, so the heap merge runs. The expected
  // figures are what OpenAI's tiktoken 1.0.22 (npm, its Rust core as wasm) gives for it.
  auto t = load(TokenizerKind::cl100k_base);
  ASSERT_TRUE(t);
  std::string base64;
  for (int i = 0; i < 40; ++i) base64 += "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo";
  auto ids = t->encode(base64);
  ASSERT_EQ(ids.size(), 800u);
  EXPECT_EQ(std::vector<std::uint32_t>(ids.begin(), ids.begin() + 12),
            (std::vector<std::uint32_t>{5876, 51015, 73587, 8796, 15, 71, 12830, 5964, 8673, 52, 20, 6459}));
  EXPECT_EQ(t->decode(ids), base64);
}

// The build packs every rank file; the pack and the text it was made from must tokenize alike.
TEST(Tokenizer, APackedTableCountsLikeItsRankFile) {
  namespace fs = std::filesystem;
  const std::string text = "Hello, wörld! 123456 'll  \n\n\t x ſ 😊 こんにちは <EOT> a<META_START>b \xEF\xAC\x81sh end  ";
  fs::path text_only = fs::temp_directory_path() / ("compactor-text-ranks-" + std::to_string(::getpid()));
  fs::create_directories(text_only);
  for (auto kind : {TokenizerKind::cl100k_base, TokenizerKind::o200k_base, TokenizerKind::claude_legacy}) {
    ASSERT_TRUE(fs::exists(fs::path(COMPACTOR_METER_DATA_DIR) / packed_rank_file_name(kind))) << to_string(kind);
    fs::copy_file(fs::path(COMPACTOR_METER_DATA_DIR) / rank_file_name(kind), text_only / rank_file_name(kind),
                  fs::copy_options::overwrite_existing);
    auto packed = load(kind);
    auto parsed = Tokenizer::load(kind, text_only.string());
    ASSERT_TRUE(packed && parsed) << to_string(kind);
    EXPECT_EQ(packed->encode(text), (*parsed)->encode(text)) << to_string(kind);
    EXPECT_EQ(packed->decode(packed->encode(text)), (*parsed)->decode((*parsed)->encode(text))) << to_string(kind);
  }
  // A pack made from another rank file (its size differs) is not used: the text is read.
  fs::copy_file(fs::path(COMPACTOR_METER_DATA_DIR) / packed_rank_file_name(TokenizerKind::cl100k_base),
                text_only / packed_rank_file_name(TokenizerKind::o200k_base), fs::copy_options::overwrite_existing);
  auto o200k = Tokenizer::load(TokenizerKind::o200k_base, text_only.string());
  ASSERT_TRUE(o200k);
  EXPECT_EQ((*o200k)->encode(text), load(TokenizerKind::o200k_base)->encode(text));
  // A damaged pack is refused and the text read.
  std::ofstream(text_only / packed_rank_file_name(TokenizerKind::o200k_base), std::ios::binary | std::ios::trunc) << "CMPRANK1 damaged";
  o200k = Tokenizer::load(TokenizerKind::o200k_base, text_only.string());
  ASSERT_TRUE(o200k);
  EXPECT_EQ((*o200k)->encode(text), load(TokenizerKind::o200k_base)->encode(text));
  fs::remove_all(text_only);
}

TEST(Tokenizer, AMissingRankFileSaysWhichAndWhatToDo) {
  auto t = Tokenizer::load(TokenizerKind::o200k_base, "/nonexistent");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("/nonexistent/o200k_base.tiktoken"), std::string::npos);
  EXPECT_NE(t.error().message.find("tools/setup.sh"), std::string::npos);
}

}  // namespace
}  // namespace compactor
