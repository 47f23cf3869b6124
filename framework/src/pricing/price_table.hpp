// What a model call costs and how much it may hold: per model, the price of input, cache writes,
// cache reads and output tokens, the shortest prefix the provider's prompt cache will store, how
// long an unused cached prefix lives, and the model's context window. Read from a YAML table
// (configs/prices.yaml) that names its sources and dates, so a cost or a window says where it
// came from. The bench prices every replayed call with it, the HTTP summarizers price their own
// calls, `budget: {window: auto}` finds the window of a request's model, and the cost gate
// (host/cost_gate.hpp) weighs a compaction with it.
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

struct ModelPrice {
  std::string name;                // the entry's key, e.g. "claude-sonnet-4-5"
  std::string family;              // "sonnet", "opus", "haiku", "gpt-4o", …
  std::vector<std::string> match;  // model-id prefixes this entry prices
  // USD per million tokens.
  double input = 0, cache_write = 0, cache_read = 0, output = 0;
  std::uint64_t min_cacheable_tokens = 1024;
  std::uint64_t cache_lifetime_s = 300;  // an unused cached prefix lives this long (Anthropic's default: 5 minutes)
  // USD per million tokens written to the one-hour cache (a request's `cache_control.ttl: "1h"`:
  // Anthropic bills it at 2x input); not given: cache_write (no premium for a longer retention).
  double cache_write_1h = 0;
  std::uint64_t context_window = 0;      // tokens a request may hold, cached ones included; 0: not given

  // USD for one call: `uncached_input` at the input price, the rest at theirs.
  double cost(std::uint64_t uncached_input, std::uint64_t cache_write_tokens, std::uint64_t cache_read_tokens,
              std::uint64_t output_tokens) const;
  // The same entry as a request that caches for `lifetime_s` sees it: past 300 s (the one-hour
  // cache), writes at cache_write_1h and that lifetime.
  ModelPrice with_cache_lifetime(std::uint64_t lifetime_s) const;
};

// The window `budget: {window: auto}` compacts against, and how the table found it.
struct ModelWindow {
  std::uint64_t tokens = 0;
  const ModelPrice* entry = nullptr;  // the entry priced for the model (nullptr: none)
  std::string how;                    // "claude-sonnet-4-5", "the sonnet family's smallest", …
};

struct PriceTable {
  std::string source, date;
  std::string window_source, window_date;  // of the context windows
  std::vector<ModelPrice> models;
  std::string default_model;  // the entry used when a session names no model

  // The entry whose `match` prefix is the longest prefix of `model`, or whose name or family
  // equals it; else the family rule: the first entry of the family whose name is a word of the
  // id (`claude-opus-5` → opus, `anthropic/claude-sonnet-4.5` → sonnet); nullptr if none.
  const ModelPrice* find(std::string_view model) const;

  // The context window of `model`: its entry's when a prefix or name finds one; an id found by
  // its family alone gets the family's smallest window (a new model of a family is assumed no
  // larger than the smallest of its kin: compacting early costs less than a refused call); an id
  // nothing finds, or an empty one, gets the default model's. Nothing when that has no window.
  std::optional<ModelWindow> window_of(std::string_view model) const;
};

// Every error names the file and the line:col of the offending node.
Expected<PriceTable> read_price_table(const std::string& path);

}  // namespace compactor
