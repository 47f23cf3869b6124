// The price table: lookups by model id, family and name; costs worked out by hand from the
// shipped table's figures; located errors for every malformed entry.
#include "pricing/price_table.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;

const PriceTable& shipped() {
  static const PriceTable table = [] {
    auto t = read_price_table(COMPACTOR_CONFIGS_DIR "/prices.yaml");
    if (!t) ADD_FAILURE() << t.error().message;
    return t ? *t : PriceTable{};
  }();
  return table;
}

TEST(PriceTable, ModelIdsFindTheirEntryByLongestPrefix) {
  const PriceTable& t = shipped();
  ASSERT_NE(t.find("claude-opus-4-5-20251101"), nullptr);
  EXPECT_EQ(t.find("claude-opus-4-5-20251101")->name, "claude-opus-4-5");
  EXPECT_EQ(t.find("claude-opus-4-5-20251101")->min_cacheable_tokens, 4096u);
  EXPECT_EQ(t.find("claude-sonnet-4-5-20250929")->name, "claude-sonnet-4-5");
  EXPECT_EQ(t.find("claude-haiku-4-5-20251001")->family, "haiku");
  EXPECT_EQ(t.find("gpt-4o-mini-2024-07-18")->name, "gpt-4o-mini");  // longer than "gpt-4o"
  EXPECT_EQ(t.find("gpt-4o-2024-08-06")->name, "gpt-4o");
  EXPECT_EQ(t.find("sonnet")->name, "claude-sonnet-4-5");  // a family finds its first entry
  EXPECT_EQ(t.find("no-such-model"), nullptr);
  EXPECT_EQ(t.default_model, "claude-sonnet-4-5");
  EXPECT_FALSE(t.source.empty());
  EXPECT_EQ(t.date, "2026-12-01");
}

TEST(PriceTable, GeminiModelIdsFindTheirTier) {
  const PriceTable& t = shipped();
  ASSERT_NE(t.find("gemini-3.1-pro-preview"), nullptr);
  EXPECT_EQ(t.find("gemini-3.1-pro-preview")->name, "gemini-3-pro");
  EXPECT_EQ(t.find("gemini-3.8-flash")->name, "gemini-3-flash");
  EXPECT_EQ(t.find("gemini-3.5-flash-lite")->name, "gemini-2.5-flash-lite");  // longer than gemini-3.5-flash
  EXPECT_EQ(t.find("gemini-2.5-flash-preview-09-2025")->name, "gemini-2.5-flash");
  EXPECT_EQ(t.find("gemini-2.5-pro")->family, "gemini-pro");
  // Implicit caching has no write premium: 1,000,000 × 1.25 + 1,000,000 × 1.25 + 0 + 0 = $2.50.
  EXPECT_DOUBLE_EQ(t.find("gemini-2.5-pro")->cost(1000000, 1000000, 0, 0), 2.5);
}

TEST(PriceTable, CostsAreWorkedOutPerMillionTokens) {
  const ModelPrice* sonnet = shipped().find("claude-sonnet-4-5-20250929");
  ASSERT_NE(sonnet, nullptr);
  // 10,000 × 3 + 2,000 × 3.75 + 50,000 × 0.30 + 1,000 × 15 = 67,500 → $0.0675
  EXPECT_DOUBLE_EQ(sonnet->cost(10000, 2000, 50000, 1000), 0.0675);
  const ModelPrice* opus = shipped().find("claude-opus-4-5-20251101");
  // 1,000,000 × 5 + 0 + 1,000,000 × 0.50 + 100,000 × 25 = 8,000,000 → $8
  EXPECT_DOUBLE_EQ(opus->cost(1000000, 0, 1000000, 100000), 8.0);
}

TEST(PriceTable, EveryShippedModelHasAWindowWithItsSource) {
  const PriceTable& t = shipped();
  EXPECT_FALSE(t.window_source.empty());
  EXPECT_EQ(t.window_date, "2026-12-01");
  for (const ModelPrice& m : t.models) {
    EXPECT_GT(m.context_window, 0u) << m.name;
    EXPECT_EQ(m.cache_lifetime_s, 300u) << m.name;  // not given: Anthropic's 5-minute cache
    // Anthropic's one-hour cache writes at 2x input; the others charge no premium for retention.
    EXPECT_DOUBLE_EQ(m.cache_write_1h, m.family == "opus" || m.family == "sonnet" || m.family == "haiku" ? 2 * m.input : m.cache_write)
        << m.name;
  }
  // GPT-5's 400,000 tokens hold 128,000 of output: a request may hold 272,000.
  EXPECT_EQ(t.window_of("gpt-5-codex")->tokens, 272000u);
  EXPECT_EQ(t.window_of("claude-sonnet-4-5-20250929")->tokens, 200000u);
  EXPECT_EQ(t.window_of("claude-sonnet-4-6")->tokens, 1000000u);
  EXPECT_EQ(t.window_of("claude-opus-4-7")->entry->name, "claude-opus-4-6");
  EXPECT_EQ(t.window_of("gemini-2.5-pro")->tokens, 1048576u);
}

TEST(PriceTable, AnIdNoPrefixFindsGoesByItsFamilyAndItsSmallestWindow) {
  const PriceTable& t = shipped();
  // A family name that is a word of the id: its first entry's prices, its smallest window (a
  // sonnet of 200,000 and one of 1,000,000: the new one is assumed the smaller).
  ASSERT_NE(t.find("claude-sonnet-5"), nullptr);
  EXPECT_EQ(t.find("claude-sonnet-5")->name, "claude-sonnet-4-5");
  EXPECT_EQ(t.find("anthropic/claude-opus-9")->name, "claude-opus-4-5");
  EXPECT_EQ(t.window_of("anthropic/claude-sonnet-9")->tokens, 200000u);
  EXPECT_EQ(t.window_of("anthropic/claude-sonnet-9")->how, "the sonnet family's smallest");
  // "gemini-flash-lite" is a longer family name than "gemini-flash": the longest word wins.
  EXPECT_EQ(t.find("vertex/gemini-flash-lite-x")->family, "gemini-flash-lite");
  EXPECT_EQ(t.find("my-sonnets"), nullptr);  // a word, not a part of one
  // Nothing finds it: the default model's window, said so.
  EXPECT_EQ(t.window_of("llama-3-70b")->tokens, 200000u);
  EXPECT_EQ(t.window_of("llama-3-70b")->how, "claude-sonnet-4-5, the table's default model");
  EXPECT_EQ(t.window_of("")->how, "claude-sonnet-4-5, the table's default model");
}

std::string error_of(const std::string& yaml) {
  fs::path file = fs::temp_directory_path() / ("compactor-prices-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << yaml;
  auto t = read_price_table(file.string());
  fs::remove(file);
  return t ? std::string("(accepted)") : t.error().message.substr(t.error().message.find(".yaml:") + 6);
}

// Lines 1-6; the entry's next key is on line 7.
constexpr const char* kHead = "version: 1\nsource: s\ndate: d\nmodels:\n  m:\n    family: f\n";

TEST(PriceTable, MalformedEntriesAreLocatedErrors) {
  EXPECT_EQ(error_of(std::string(kHead) + "    input: 1\n    cache_write: 1\n    cache_read: 1\n    output: 1\n"), "(accepted)");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: \"3\"\n    cache_write: 1\n    cache_read: 1\n    output: 1\n"),
            "7:12: models.m.input: expected a non-negative number (USD per million tokens), got \"3\"");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: -1\n    cache_write: 1\n    cache_read: 1\n    output: 1\n"),
            "7:12: models.m.input: expected a non-negative number (USD per million tokens), got \"-1\"");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: 1\n    cache_read: 1\n    output: 1\n"),
            "6:5: models.m: missing \"cache_write\" (USD per million tokens)");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: 1\n    cache_write: 1\n    cache_read: 1\n    output: 1\n    outptu: 2\n"),
            "11:5: models.m.outptu: unknown key; expected one of cache_lifetime_s, cache_read, cache_write, cache_write_1h, context_window, "
            "family, input, match, min_cacheable_tokens, output");
  EXPECT_EQ(error_of("version: 2\nsource: s\ndate: d\nmodels: {}\n"), "1:1: version: expected 1");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: 1\n    cache_write: 1\n    cache_read: 1\n    output: 1\n    context_window: 200k\n"),
            "11:21: models.m.context_window: expected a non-negative integer, got \"200k\"");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: 1\n    cache_write: 1\n    cache_read: 1\n    output: 1\n    context_window: 9000\n"),
            "11:21: models.m.context_window: the table gives windows without window_source and window_date");
  EXPECT_EQ(error_of("version: 1\nsource: s\ndate: d\nwindow_source: w\nmodels: {}\n"), "1:1: price table: missing \"window_date\"");
  EXPECT_EQ(error_of(std::string(kHead) + "    input: 1\n    cache_write: 1\n    cache_read: 1\n    output: 1\ndefault_model: x\n"),
            "11:16: default_model: not one of the models");
}

}  // namespace
}  // namespace compactor
