// What a model call costs: per model, the price of input, cache writes, cache reads and output
// tokens, and the shortest prefix the provider's prompt cache will store. Read from a YAML table
// (configs/prices.yaml) that names its source and date, so a cost figure says where it came from.
// The bench prices every replayed call with it and the HTTP summarizers price their own calls.
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
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

  // USD for one call: `uncached_input` at the input price, the rest at theirs.
  double cost(std::uint64_t uncached_input, std::uint64_t cache_write_tokens, std::uint64_t cache_read_tokens,
              std::uint64_t output_tokens) const;
};

struct PriceTable {
  std::string source, date;
  std::vector<ModelPrice> models;
  std::string default_model;  // the entry used when a session names no model

  // The entry whose `match` prefix is the longest prefix of `model`, or whose name or family
  // equals it; nullptr if none.
  const ModelPrice* find(std::string_view model) const;
};

// Every error names the file and the line:col of the offending node.
Expected<PriceTable> read_price_table(const std::string& path);

}  // namespace compactor
