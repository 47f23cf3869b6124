// The bench's colours. A config keeps one colour in every chart and the report (its index's), the
// uncompacted baseline a grey of its own; what is not a config (the parts of a bill, the kinds of
// probe) takes its colours from a ramp no config colour is in, so a reader never takes a billing
// category for a config.
#pragma once

#include <cstdint>
#include <string>

namespace compactor::bench {

// The colour of config `index` of `configs` (the baseline's index is `configs`).
std::string config_color(std::uint64_t index, std::uint64_t configs);

// The colour of category `index` of a chart's categories (cost-split's, retention's).
std::string category_color(std::size_t index);

}  // namespace compactor::bench
