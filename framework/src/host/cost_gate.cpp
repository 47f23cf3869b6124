#include "host/cost_gate.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace compactor {

namespace {

// USD for one request of `size` tokens of which the first `cached` are read from the cache.
double call_cost(std::uint64_t size, std::uint64_t cached, const ModelPrice& p) {
  if (size < p.min_cacheable_tokens) return p.cost(size, 0, 0, 0);
  const std::uint64_t read = cached >= p.min_cacheable_tokens ? std::min(cached, size) : 0;
  return p.cost(0, size - read, read, 0);
}

}  // namespace

std::string GateDecision::to_string() const {
  std::string out = fmt::format("{}: saves ${:.4f} over the next {} call{}, breaks ${:.4f} of cache ({})", commit ? "committed" : "declined",
                                saved_usd, horizon, horizon == 1 ? "" : "s", broken_usd, warm ? "warm" : "cold");
  if (summarizer_usd > 0) out += fmt::format(", of which ${:.4f} the summarizer's calls", summarizer_usd);
  return out;
}

bool cache_warm(const CacheState& cache, std::uint64_t lifetime_s) {
  const std::uint64_t idle = static_cast<std::uint64_t>(std::max<std::int64_t>(0, cache.idle_s));
  return idle * 10 < lifetime_s * 9;
}

std::uint64_t requested_cache_lifetime(std::string_view json) {
  // The value after a key, spaces skipped: `"ttl": "1h"`.
  auto value_is = [&](std::string_view key, std::string_view value) {
    for (std::size_t at = json.find(key); at != std::string_view::npos; at = json.find(key, at + key.size())) {
      std::size_t v = json.find_first_not_of(" \t\r\n", at + key.size());
      if (v == std::string_view::npos || json[v] != ':') continue;
      v = json.find_first_not_of(" \t\r\n", v + 1);
      if (v != std::string_view::npos && json.substr(v, value.size()) == value) return true;
    }
    return false;
  };
  if (value_is("\"prompt_cache_retention\"", "\"24h\"")) return 86400;
  if (value_is("\"ttl\"", "\"1h\"")) return 3600;
  return 0;
}

std::uint64_t gate_horizon(const CacheState& cache) { return std::max<std::uint64_t>(1, cache.calls / 19); }

GateDecision weigh_compaction(const GateInput& in, const ModelPrice& price, bool warm) {
  GateDecision d;
  d.warm = warm;
  d.horizon = in.horizon;
  const std::uint64_t cached_in = warm ? in.cached_in : 0, cached_kept = warm ? std::min(in.cached_kept, in.cached_in) : 0;
  d.summarizer_usd = in.summarizer_usd;
  d.broken_usd = call_cost(in.size_out, cached_kept, price) - call_cost(in.size_in, cached_in, price) + in.summarizer_usd;
  // Every call that follows reads the history from the cache: the compacted one is that much shorter.
  const double per_call = call_cost(in.size_in, in.size_in, price) - call_cost(in.size_out, in.size_out, price);
  d.saved_usd = static_cast<double>(in.horizon) * per_call;
  // Cold, nothing cached is broken: committed, unless the summarizer's calls cost more than the
  // compaction saves now and later.
  d.commit = (!warm && in.summarizer_usd <= 0) || d.broken_usd <= 0 || d.saved_usd > d.broken_usd;
  return d;
}

}  // namespace compactor
