// The cost gate: a compaction is committed only when what it saves over the calls that follow
// exceeds what breaking the prompt cache costs now. An agent pays per call for its whole history,
// most of it read from the provider's cache at a tenth of the input price; a compaction rewrites
// the history from its first changed message on, which the next call writes to the cache again
// (Anthropic: 1.25 times the input price). So a compaction pays only when the calls after it read
// enough fewer tokens. A cold cache (no call within its lifetime) holds nothing to break: the next
// call writes the whole history anyway, and a smaller one costs less, so it always compacts.
// The cache's lifetime and write price are the request's: `cache_control.ttl: "1h"` keeps it an
// hour and writes it at the one-hour price; OpenAI's `prompt_cache_retention: "24h"` a day.
#pragma once

#include "pricing/price_table.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace compactor {

// What the provider's prompt cache holds when a run starts, as the caller knows it.
struct CacheState {
  std::size_t cached_messages = 0;  // the input's first messages, as the previous call sent them
  std::uint64_t calls = 0;          // model calls the conversation made before this one
  std::int64_t idle_s = 0;          // seconds since that call: warm while under the cache's lifetime
  std::uint64_t lifetime_s = 0;     // the cache's lifetime the request asks for (0: the price's)
};

// Whether the cache still holds the previous call's prefix when this one is sent. A clock that
// ran backwards (a negative idle time: the previous call's time came from another machine, or the
// wall clock was set back) reads as warm: taken as cold, the gate would commit a compaction that
// breaks a live cache. A cache in the last tenth of its life reads as cold: it is about to expire
// anyway (a request a few seconds slower would write it whole), so a compaction due is made now,
// when it breaks little, rather than on a warm cache later.
bool cache_warm(const CacheState& cache, std::uint64_t lifetime_s);

// The lifetime (seconds) a request asks its provider's cache to keep it: 3600 when a
// cache_control says `"ttl": "1h"`, 86400 for `"prompt_cache_retention": "24h"`, else 0 (the
// price's). `json` is any part of the request as the client wrote it.
std::uint64_t requested_cache_lifetime(std::string_view json);

// A compaction weighed in tokens: the request before and after it, the prefix the cache holds of
// the input, and how much of that prefix the output still starts with.
struct GateInput {
  std::uint64_t size_in = 0, size_out = 0;
  std::uint64_t cached_in = 0;    // 0 when the cache is cold
  std::uint64_t cached_kept = 0;  // ≤ cached_in
  std::uint64_t horizon = 1;      // the calls that follow, over which the saving counts
  double summarizer_usd = 0;      // what the summarizer's model calls for this compaction cost
};

struct GateDecision {
  bool commit = true;
  double saved_usd = 0;   // what the calls that follow read less, over `horizon` calls
  double broken_usd = 0;  // what this call costs more (negative: it costs less), the summarizer's calls included
  double summarizer_usd = 0;
  std::uint64_t horizon = 0;
  bool warm = false;
  // "committed: saves $0.4500 over the next 30 calls, breaks $0.2955 of cache (warm)", and
  // ", of which $0.0120 the summarizer's calls" when it made some
  std::string to_string() const;
};

// The calls a compaction's saving is counted over: a nineteenth of the calls the conversation
// made so far (at least one). Nothing says how long a session will go on; seen at a random point
// of its life (J. R. Gott's argument), a session that made t calls makes at least t/19 more with
// probability 0.95. So a committed compaction pays for itself unless the session ends sooner than
// 19 times in 20 it would: the gate errs on the side of not compacting, the side on which the
// agent pays what it would have paid without Compactor.
std::uint64_t gate_horizon(const CacheState& cache);

// Commit when the cache is cold, when the compaction costs less even now, or when the saving
// exceeds the cost of the cache it breaks plus the summarizer's calls (a compaction whose summary
// cost more than it saves does not pay, warm or cold). A request shorter than the price's minimum
// cacheable length is priced as uncached input.
GateDecision weigh_compaction(const GateInput& in, const ModelPrice& price, bool warm);

}  // namespace compactor
