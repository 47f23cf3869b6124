// The cost gate's rule, on figures worked out by hand at Claude Sonnet's prices (USD per million
// tokens: input 3, cache write 3.75, cache read 0.30; 1,024 tokens the shortest cached prefix).
#include "host/cost_gate.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

ModelPrice sonnet() {
  ModelPrice p;
  p.name = "claude-sonnet-4-5";
  p.input = 3.00;
  p.cache_write = 3.75;
  p.cache_read = 0.30;
  p.output = 15.00;
  p.min_cacheable_tokens = 1024;
  return p;
}

// A history of 170,000 tokens whose first 160,000 the previous call cached; compacted to 120,000
// tokens of which the first 20,000 are that cached prefix unchanged (a summary after the system
// prompt's worth of messages).
GateInput summarized(std::uint64_t horizon) {
  GateInput in;
  in.size_in = 170000;
  in.size_out = 120000;
  in.cached_in = 160000;
  in.cached_kept = 20000;
  in.horizon = horizon;
  return in;
}

// This call, uncompacted: 160,000 read × 0.30 + 10,000 written × 3.75 = 48,000 + 37,500 µ$ = $0.0855.
// Compacted: 20,000 read × 0.30 + 100,000 written × 3.75 = 6,000 + 375,000 µ$ = $0.3810.
// It breaks $0.2955 of cache. Every call after it reads 50,000 fewer tokens: 50,000 × 0.30 = $0.015.
TEST(CostGate, ACompactionThatSavesLessThanTheCacheItBreaksIsDeclined) {
  GateDecision d = weigh_compaction(summarized(10), sonnet(), true);
  EXPECT_FALSE(d.commit);
  EXPECT_NEAR(d.broken_usd, 0.2955, 1e-9);
  EXPECT_NEAR(d.saved_usd, 0.15, 1e-9);  // 10 calls × $0.015
  EXPECT_EQ(d.to_string(), "declined: saves $0.1500 over the next 10 calls, breaks $0.2955 of cache (warm)");
}

TEST(CostGate, ACompactionThatSavesMoreThanTheCacheItBreaksIsCommitted) {
  GateDecision d = weigh_compaction(summarized(30), sonnet(), true);
  EXPECT_TRUE(d.commit);
  EXPECT_NEAR(d.saved_usd, 0.45, 1e-9);  // 30 calls × $0.015 > $0.2955
  EXPECT_NEAR(d.broken_usd, 0.2955, 1e-9);
  // One call short of paying: 19 × $0.015 = $0.285 < $0.2955; 20 × $0.015 = $0.30 > it.
  EXPECT_FALSE(weigh_compaction(summarized(19), sonnet(), true).commit);
  EXPECT_TRUE(weigh_compaction(summarized(20), sonnet(), true).commit);
}

// Cold (no call within the cache lifetime): nothing is cached, the next call writes the whole
// history either way: 170,000 × 3.75 = $0.6375 uncompacted, 120,000 × 3.75 = $0.45 compacted.
TEST(CostGate, ACompactionOnAColdCacheIsAlwaysCommitted) {
  GateDecision d = weigh_compaction(summarized(1), sonnet(), false);
  EXPECT_TRUE(d.commit);
  EXPECT_NEAR(d.broken_usd, -0.1875, 1e-9);  // it costs less even now
  EXPECT_FALSE(d.warm);
  // Even one that saves next to nothing: the cold write is smaller.
  GateInput tiny = summarized(1);
  tiny.size_out = 169990;
  EXPECT_TRUE(weigh_compaction(tiny, sonnet(), false).commit);
}

// Masking only the newest results keeps most of the cache (145,000 of the 160,000 cached tokens
// kept, 5,000 rewritten), so the compacted call costs less than the uncompacted one: committed
// whatever the horizon.
TEST(CostGate, ACompactionThatCostsLessEvenNowIsCommitted) {
  GateInput in;
  in.size_in = 170000;
  in.cached_in = 160000;
  in.size_out = 150000;
  in.cached_kept = 145000;
  in.horizon = 1;
  // Uncompacted 160,000 × 0.30 + 10,000 × 3.75 = $0.0855; compacted 145,000 × 0.30 + 5,000 × 3.75 = $0.06225.
  GateDecision d = weigh_compaction(in, sonnet(), true);
  EXPECT_TRUE(d.commit);
  EXPECT_NEAR(d.broken_usd, 0.06225 - 0.0855, 1e-9);
}

// Under the shortest cacheable prefix nothing is cached: every token is input.
TEST(CostGate, AHistoryTooShortToCacheIsPricedAsInput) {
  GateInput in;
  in.size_in = 1000;
  in.cached_in = 900;
  in.size_out = 600;
  in.cached_kept = 100;
  in.horizon = 1;
  GateDecision d = weigh_compaction(in, sonnet(), true);
  EXPECT_NEAR(d.broken_usd, (600.0 - 1000.0) * 3 / 1e6, 1e-12);
  EXPECT_NEAR(d.saved_usd, 400.0 * 3 / 1e6, 1e-12);
  EXPECT_TRUE(d.commit);
}

// The same growth (a summary longer than what it replaced: 170,000 tokens become 171,000), priced
// with nothing cached so that warm and cold weigh the same figures: this call writes 1,000 tokens
// more, 1,000 × 3.75 = $0.00375 broken, and every call after reads 1,000 more, 1,000 × 0.30 =
// -$0.0003 saved. On a warm cache that is declined; on a cold one it is committed all the same,
// and only because the cache is cold: nothing is cached to break, and the gate does not second-guess
// what the stages judged necessary.
TEST(CostGate, OnlyTheColdCacheCommitsACompactionThatGrowsTheRequest) {
  GateInput in;
  in.size_in = 170000;
  in.size_out = 171000;
  in.horizon = 1;
  GateDecision warm = weigh_compaction(in, sonnet(), true);
  EXPECT_FALSE(warm.commit);
  EXPECT_NEAR(warm.broken_usd, 0.00375, 1e-12);
  EXPECT_NEAR(warm.saved_usd, -0.0003, 1e-12);
  GateDecision cold = weigh_compaction(in, sonnet(), false);
  EXPECT_TRUE(cold.commit);
  EXPECT_NEAR(cold.broken_usd, 0.00375, 1e-12);
  EXPECT_NEAR(cold.saved_usd, -0.0003, 1e-12);
  EXPECT_EQ(cold.to_string(), "committed: saves $-0.0003 over the next 1 call, breaks $0.0038 of cache (cold)");
}

// A made-up price whose figures are exact in binary (input 4, cache write 5, cache read 0.5 USD per
// million tokens) and token counts in units of u = 31,250 (u × 0.5 = 15,625, and 15,625 / 10^6 =
// 1/64): every cost below is a multiple of 1/64 of a dollar, so the equality is exact, not a
// rounding accident.
ModelPrice exact() {
  ModelPrice p;
  p.name = "exact";
  p.input = 4;
  p.cache_write = 5;
  p.cache_read = 0.5;
  p.output = 16;
  p.min_cacheable_tokens = 1024;
  return p;
}
constexpr std::uint64_t u = 31250;

// 6u tokens, 5u cached, compacted to 4u of which the first u are the cached prefix kept.
// This call: uncompacted 5u read × 0.5 + 1u written × 5 = 7.5u; compacted 1u × 0.5 + 3u × 5 = 15.5u:
// broken 8u = $0.25. Every call after reads 2u fewer: 2u × 0.5 = 1u = $0.03125 a call. Over 8 calls
// saved is exactly broken, $0.25: no gain, so declined (the rule is "saves more than it breaks");
// over 9 calls, $0.28125, committed.
TEST(CostGate, ASavingThatOnlyEqualsWhatItBreaksIsDeclined) {
  GateInput in;
  in.size_in = 6 * u;
  in.cached_in = 5 * u;
  in.size_out = 4 * u;
  in.cached_kept = u;
  in.horizon = 8;
  GateDecision d = weigh_compaction(in, exact(), true);
  EXPECT_EQ(d.broken_usd, 0.25);
  EXPECT_EQ(d.saved_usd, 0.25);
  EXPECT_FALSE(d.commit);
  in.horizon = 9;
  d = weigh_compaction(in, exact(), true);
  EXPECT_EQ(d.saved_usd, 0.28125);
  EXPECT_TRUE(d.commit);
}

// The output may keep more of the input's first messages than the previous call sent (a caller
// that knows the cache held 2u of a 6u history, and a compaction whose first change is past 4u):
// only what was cached is read. Compacted to 5u: 2u read × 0.5 + 3u written × 5 = 16u; uncompacted
// 2u × 0.5 + 4u × 5 = 21u; broken -5u = -$0.15625. (Reading the 4u kept as cached would make the
// compacted call 4u × 0.5 + 1u × 5 = 7u, broken -$0.4375.) Saved: 1u × 0.5 = $0.015625 a call.
TEST(CostGate, NoMoreIsReadFromTheCacheThanItHolds) {
  GateInput in;
  in.size_in = 6 * u;
  in.cached_in = 2 * u;
  in.size_out = 5 * u;
  in.cached_kept = 4 * u;
  in.horizon = 1;
  GateDecision d = weigh_compaction(in, exact(), true);
  EXPECT_EQ(d.broken_usd, -0.15625);
  EXPECT_EQ(d.saved_usd, 0.015625);
  EXPECT_TRUE(d.commit);
}

// A request above the shortest cacheable prefix whose cached part is below it: the provider cached
// nothing, so all of it is written. 170,000 tokens of which the previous call sent 1,000 (under
// Sonnet's 1,024): uncompacted 170,000 × 3.75 = $0.6375, compacted to 120,000 (nothing kept)
// 120,000 × 3.75 = $0.45: broken -$0.1875. (Reading the 1,000 would make the uncompacted call
// 1,000 × 0.30 + 169,000 × 3.75 = $0.63405, broken -$0.18405.)
TEST(CostGate, ACachedPrefixBelowTheShortestCacheableIsNotRead) {
  GateInput in;
  in.size_in = 170000;
  in.cached_in = 1000;
  in.size_out = 120000;
  in.cached_kept = 0;
  in.horizon = 1;
  GateDecision d = weigh_compaction(in, sonnet(), true);
  EXPECT_NEAR(d.broken_usd, -0.1875, 1e-12);
  EXPECT_NEAR(d.saved_usd, 50000 * 0.30 / 1e6, 1e-12);
  EXPECT_TRUE(d.commit);
}

// The one-hour cache (`cache_control.ttl: "1h"`): written at 2x input ($6.00 at Sonnet's prices).
// This call uncompacted: 160,000 read × 0.30 + 10,000 written × 6.00 = 48,000 + 60,000 µ$ = $0.108;
// compacted: 20,000 × 0.30 + 100,000 × 6.00 = 6,000 + 600,000 µ$ = $0.606; it breaks $0.498. Each
// call after saves 50,000 × 0.30 = $0.015: 33 calls ($0.495) do not pay, 34 ($0.51) do.
TEST(CostGate, TheOneHourCacheIsWeighedAtItsOwnWritePrice) {
  ModelPrice p = sonnet();
  p.cache_write_1h = 6.00;
  const ModelPrice hour = p.with_cache_lifetime(3600);
  EXPECT_EQ(hour.cache_lifetime_s, 3600u);
  EXPECT_DOUBLE_EQ(hour.cache_write, 6.00);
  EXPECT_DOUBLE_EQ(p.with_cache_lifetime(300).cache_write, 3.75);  // the five-minute cache keeps its price
  GateDecision d = weigh_compaction(summarized(33), hour, true);
  EXPECT_NEAR(d.broken_usd, 0.498, 1e-9);
  EXPECT_NEAR(d.saved_usd, 0.495, 1e-9);
  EXPECT_FALSE(d.commit);
  EXPECT_TRUE(weigh_compaction(summarized(34), hour, true).commit);
  // Ten minutes after the previous call: cold for the five-minute cache, warm for the hour's.
  const CacheState ten_minutes{10, 40, 600};
  EXPECT_FALSE(cache_warm(ten_minutes, 300));
  EXPECT_TRUE(cache_warm(ten_minutes, 3600));
}

// The request says which lifetime it asks for; a "ttl" inside a string (a tool result quoting a
// request) is not the request's.
TEST(CostGate, TheLifetimeIsTheRequests) {
  EXPECT_EQ(requested_cache_lifetime(R"({"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}})"), 3600u);
  EXPECT_EQ(requested_cache_lifetime(R"({"cache_control": {"type": "ephemeral", "ttl" : "1h"}})"), 3600u);
  EXPECT_EQ(requested_cache_lifetime(R"({"cache_control":{"type":"ephemeral","ttl":"5m"}})"), 0u);
  EXPECT_EQ(requested_cache_lifetime(R"({"type":"text","text":"\"ttl\": \"1h\""})"), 0u);
  EXPECT_EQ(requested_cache_lifetime(R"({"model":"gpt-5","prompt_cache_retention": "24h","input":[]})"), 86400u);
  EXPECT_EQ(requested_cache_lifetime(R"({"model":"gpt-5","prompt_cache_retention":"in_memory"})"), 0u);
}

// A clock that ran backwards (the previous call's time is in the future) is warm, never cold: cold,
// the gate would commit a compaction that breaks a live cache. The last tenth of the lifetime is
// cold: 269 s of 300 is warm (2,690 < 2,700), 270 s is about to expire.
TEST(CostGate, ABackwardsClockIsWarmAndAnExpiringCacheCold) {
  EXPECT_TRUE(cache_warm(CacheState{10, 40, -120}, 300));
  EXPECT_TRUE(cache_warm(CacheState{10, 40, -1}, 300));
  EXPECT_TRUE(cache_warm(CacheState{10, 40, 0}, 300));
  EXPECT_TRUE(cache_warm(CacheState{10, 40, 269}, 300));
  EXPECT_FALSE(cache_warm(CacheState{10, 40, 270}, 300));
  EXPECT_FALSE(cache_warm(CacheState{10, 40, 301}, 300));
  EXPECT_TRUE(cache_warm(CacheState{10, 40, 3239}, 3600));
  EXPECT_FALSE(cache_warm(CacheState{10, 40, 3240}, 3600));
}

// The summarizer's calls count against the compaction. Warm, over 20 calls the summary above saves
// $0.30 against $0.2955 of cache: committed; a summary that cost $0.01 makes it $0.3055: declined.
// Cold, one call: the compacted call costs $0.1875 less and the next reads $0.015 less; a $0.20
// summary leaves $0.0125 to pay back (< $0.015, committed), a $0.21 one $0.0225 (declined).
TEST(CostGate, TheSummarizersCostCountsAgainstTheCompaction) {
  GateInput in = summarized(20);
  EXPECT_TRUE(weigh_compaction(in, sonnet(), true).commit);
  in.summarizer_usd = 0.01;
  GateDecision d = weigh_compaction(in, sonnet(), true);
  EXPECT_FALSE(d.commit);
  EXPECT_NEAR(d.broken_usd, 0.3055, 1e-9);
  EXPECT_EQ(d.to_string(), "declined: saves $0.3000 over the next 20 calls, breaks $0.3055 of cache (warm), of which $0.0100 the summarizer's calls");
  GateInput cold = summarized(1);
  cold.summarizer_usd = 0.20;
  d = weigh_compaction(cold, sonnet(), false);
  EXPECT_NEAR(d.broken_usd, 0.0125, 1e-9);
  EXPECT_TRUE(d.commit);
  cold.summarizer_usd = 0.21;
  EXPECT_FALSE(weigh_compaction(cold, sonnet(), false).commit);
}

// A nineteenth of the calls made so far, at least one.
TEST(CostGate, TheHorizonIsANineteenthOfTheCallsSoFar) {
  EXPECT_EQ(gate_horizon(CacheState{0, 0, 0}), 1u);
  EXPECT_EQ(gate_horizon(CacheState{0, 37, 0}), 1u);
  EXPECT_EQ(gate_horizon(CacheState{0, 38, 0}), 2u);
  EXPECT_EQ(gate_horizon(CacheState{0, 299, 0}), 15u);
}

}  // namespace
}  // namespace compactor
