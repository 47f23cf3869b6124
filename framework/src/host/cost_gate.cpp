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
  return fmt::format("{}: saves ${:.4f} over the next {} call{}, breaks ${:.4f} of cache ({})", commit ? "committed" : "declined",
                     saved_usd, horizon, horizon == 1 ? "" : "s", broken_usd, warm ? "warm" : "cold");
}

std::uint64_t gate_horizon(const CacheState& cache) { return std::max<std::uint64_t>(1, cache.calls / 19); }

GateDecision weigh_compaction(const GateInput& in, const ModelPrice& price, bool warm) {
  GateDecision d;
  d.warm = warm;
  d.horizon = in.horizon;
  const std::uint64_t cached_in = warm ? in.cached_in : 0, cached_kept = warm ? std::min(in.cached_kept, in.cached_in) : 0;
  d.broken_usd = call_cost(in.size_out, cached_kept, price) - call_cost(in.size_in, cached_in, price);
  // Every call that follows reads the history from the cache: the compacted one is that much shorter.
  const double per_call = call_cost(in.size_in, in.size_in, price) - call_cost(in.size_out, in.size_out, price);
  d.saved_usd = static_cast<double>(in.horizon) * per_call;
  d.commit = !warm || d.broken_usd <= 0 || d.saved_usd > d.broken_usd;
  return d;
}

}  // namespace compactor
