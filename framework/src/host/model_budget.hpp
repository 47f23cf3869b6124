// The budget and meter of one run: a config's `budget: {window: auto}` and `meter: {kind: auto}`
// resolved for the request's model with the config's price table, and the model's price, which
// the cost gate weighs a compaction with. A fixed budget and meter resolve to themselves.
#pragma once

#include "host/pipeline_config.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace compactor {

struct RunBudget {
  Budget budget;
  std::shared_ptr<const Meter> meter;  // counts tokens (null outside tokens)
  std::string meter_name;              // "o200k", "calibrated/sonnet", the config's kind
  std::uint64_t window = 0;            // tokens; 0 when the config gives no window
  std::string model;                   // as the request names it; empty when it names none
  std::string window_from;             // "claude-sonnet-4-5", "the table's default model (no model named)", "budget.window"
  const ModelPrice* price = nullptr;   // the model's in the config's price table (`prices:`), else nullptr
};

// `model` as the request names it (empty: none; the price table's default model then stands for
// it); `openai`: the request is an OpenAI API's (its tokenizer when the table does not know the
// model).
RunBudget run_budget(const PipelineConfig& config, std::string_view model, bool openai);

}  // namespace compactor
