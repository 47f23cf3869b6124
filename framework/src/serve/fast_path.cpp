#include "serve/fast_path.hpp"

#include "compactor/summary_format.hpp"

#include "serve/call_savings.hpp"
#include "serve/compaction_job.hpp"
#include "serve/continuity_store.hpp"
#include "serve/tenant.hpp"
#include "session/continuation.hpp"

#include "compactor/protected_tail.hpp"
#include "host/model_budget.hpp"
#include "host/run_report.hpp"
#include "loader/builtin_checkers.hpp"
#include "model/conversation_host.hpp"

#include <chrono>

namespace compactor::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

// What a worker's run reports when its stages all skip: `input` as its output, its sizes (and the
// client's whole history's, when the input continues a compacted one) measured as the run does.
RunReport unchanged_run(const RunBudget& rb, const Conversation& metered, const Conversation* received) {
  RunReport r;
  r.status = RunStatus::ok;
  r.budget = rb.budget;
  r.window = rb.window;
  if (rb.price != nullptr) r.input_usd_per_mtok = rb.price->input;
  r.input_size = r.output_size = SizeSnapshot::of(metered);
  if (received != nullptr)
    r.received_size = SizeSnapshot::of(rb.budget.unit == SizeUnit::tokens && rb.meter != nullptr ? ConversationHost::with_meter(*received, rb.meter)
                                                                                                  : *received);
  r.output = metered;
  return r;
}

// The outcome's fields as the worker fills them from that report (compaction_job.cpp).
void record_unchanged_run(JobOutcome& o, const PipelineConfig& config, const RunReport& r, const Conversation& request, bool openai) {
  const SizeUnit unit = r.budget.unit;
  o.status = "ok";
  o.unit = std::string(to_string(unit));
  o.size_in = r.input_size.sizes.in(unit);
  o.size_out = r.output_size.sizes.in(unit);
  o.window = r.window;
  o.limit = r.budget.limit;
  o.size_received = r.received_size ? r.received_size->sizes.in(unit) : o.size_in;
  const CallSavings saved = savings_of(config, r, request, o.model, openai);
  o.saved_tokens = saved.tokens;
  o.saved_usd = saved.usd;
}

}  // namespace

std::optional<JobRun> run_without_worker(const Deployment& d, const wire::WireFormat& format, const std::string& body,
                                         const std::string& tenant, const std::string& model, std::string& why) {
  const std::shared_ptr<const CallTriage>& triage = d.zygote->triage();
  const std::shared_ptr<const PipelineConfig>& budgeting = d.settings.budgeting;
  if (triage == nullptr || budgeting == nullptr) {
    why = "no triage";
    return std::nullopt;
  }
  // A zygote that ended is replaced by a reload; until one loads, calls fail open as before.
  if (!d.zygote->alive()) {
    why = "the zygote ended";
    return std::nullopt;
  }
  if (!tenant.empty() && !is_tenant_id(tenant)) {
    why = "not a tenant id";  // the worker says so
    return std::nullopt;
  }
  JobRun run;
  run.path = "fast";
  JobOutcome& o = run.outcome;
  auto t = Clock::now();
  auto request = format.read(body, "request");
  o.parse_us = us_since(t);
  // What the worker refuses, passes or rejects, it says why: it goes there.
  if (!request || !(*request)->pass_reason().empty()) {
    why = request ? "passed" : "input refused";
    return std::nullopt;
  }
  o.model = model.empty() ? format.model_named_in(body) : model;
  RunBudget rb = run_budget(*budgeting, o.model, format.openai_tokenizer());

  std::unique_ptr<store::Store> store = open_tenant_store(*budgeting, tenant);
  const ContinuityStore continuity(*store);
  const Continuation continuation((*request)->conversation());
  o.messages = continuation.request().size();
  t = Clock::now();
  const Resumed resumed = continuation.resume(format.name(), continuity.histories());
  o.state_hit = resumed.stored.has_value();
  o.covered = resumed.stored ? resumed.stored->covered : 0;
  o.state_us = us_since(t);

  const bool metered = rb.budget.unit == SizeUnit::tokens && rb.meter != nullptr;
  if (metered) rb.meter = d.meters->of(rb.meter);
  const Conversation input = metered ? ConversationHost::with_meter(resumed.input, rb.meter) : resumed.input;
  const std::vector<CheckerPtr> rules = format.rules();
  if (!run_checkers(rules, CheckInput{input, input, compute_protected_tail(input, 0), {}}).empty()) {
    why = "the input breaks the API's rules";  // the worker refuses it, naming the rule
    return std::nullopt;
  }
  // A summary standing in for a model's is replaced by a worker once the model's is written.
  for (std::size_t i = 0, n = leading_summaries(input); i < n; ++i)
    if (!read_summary_state(input, i).stands_in_for.empty()) {
      why = "a summary stands in for a model's";
      return std::nullopt;
    }
  if (auto reason = triage->needs_pipeline(input, rb.budget)) {
    why = std::move(*reason);
    return std::nullopt;
  }
  const bool continued_compacted = resumed.stored && !resumed.stored->unchanged;
  record_unchanged_run(o, *budgeting, unchanged_run(rb, input, continued_compacted ? &continuation.request() : nullptr),
                       continuation.request(), format.openai_tokenizer());

  t = Clock::now();
  auto committed = continuation.commit(resumed, input, [&](const Conversation& c) { return (*request)->write(c); },
                                       continuity.histories());
  o.write_us = us_since(t);
  if (!committed) {
    why = "the write-back failed";  // the worker reports it
    return std::nullopt;
  }
  o.result = *committed ? JobOutcome::compacted : JobOutcome::unchanged;
  if (*committed) run.body = std::move(**committed);
  report_store(o, *store, budgeting->store.kind == StoreConfig::Kind::redis ? "redis" : "folder");
  return run;
}

}  // namespace compactor::serve
