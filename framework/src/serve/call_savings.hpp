// What one call saved: the tokens the client's whole history had less those forwarded, counted
// with the config's meter whatever the budget's unit (a chars budget still bills in tokens), and
// their price at the model's uncached input price. What serve's per-tenant savings add up.
#pragma once

#include "host/pipeline_config.hpp"
#include "host/run_report.hpp"

#include "compactor/conversation.hpp"

#include <cstdint>
#include <string_view>

namespace compactor::serve {

struct CallSavings {
  std::uint64_t tokens = 0;  // 0 when the forwarded history is not smaller
  double usd = 0;            // 0 when the model has no price in the config's price table
};

// `received`: what the client sent; `r`: the run's report (its output is what goes on). Under a
// budget in tokens the report's metered sizes are used as they are; under chars or bytes both
// histories are counted with the meter the run resolves for `model` (the config's `meter:`, or
// the chars / 4 guess without one). Each message's count is cached in the message, so what the
// two histories share is counted once.
CallSavings savings_of(const PipelineConfig& config, const RunReport& r, const Conversation& received, std::string_view model,
                       bool openai);

}  // namespace compactor::serve
