#include "serve/call_savings.hpp"

#include "host/model_budget.hpp"
#include "model/conversation_host.hpp"

namespace compactor::serve {

CallSavings savings_of(const PipelineConfig& config, const RunReport& r, const Conversation& received, std::string_view model,
                       bool openai) {
  CallSavings out;
  if (!r.output) return out;
  if (r.budget.unit == SizeUnit::tokens) {
    const std::uint64_t in = r.received_size ? r.received_size->sizes.tokens : r.input_size.sizes.tokens;
    out.tokens = in > r.output_size.sizes.tokens ? in - r.output_size.sizes.tokens : 0;
  } else if (r.output_size.sizes.chars < received.sizes().chars) {
    // Measured only when the call may have saved something: the meter tokenizes what no earlier
    // count cached (a new summary, the fixed part).
    const RunBudget resolved = run_budget(config, model, openai);
    const std::uint64_t in = ConversationHost::with_meter(received, resolved.meter).sizes().tokens;
    const std::uint64_t forwarded = ConversationHost::with_meter(*r.output, resolved.meter).sizes().tokens;
    out.tokens = in > forwarded ? in - forwarded : 0;
  }
  out.usd = static_cast<double>(out.tokens) * r.input_usd_per_mtok / 1e6;
  return out;
}

}  // namespace compactor::serve
