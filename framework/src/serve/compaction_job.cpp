#include "serve/compaction_job.hpp"

#include "serve/call_savings.hpp"
#include "serve/background_summary.hpp"
#include "session/continuation.hpp"

#include <fmt/core.h>

#include <chrono>

namespace compactor::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What the provider's cache holds, known from the history stored for the previous call: what it
// sent (the input's first messages), when, and how many calls the conversation made.
CacheState cache_of(const SentHistory& stored, const Conversation& request) {
  CacheState cache;
  cache.cached_messages = stored.unchanged ? stored.covered : stored.messages.size();
  for (const auto& m : request.messages()) cache.calls += m->role() == Role::assistant;
  cache.idle_s = stored.sent_at_ms > 0 ? (unix_ms() - stored.sent_at_ms) / 1000 : 0;
  return cache;
}

// The outcome's budget, gate and warning fields from the run's report.
void record_run(const RunReport& r, JobOutcome& o) {
  o.status = std::string(to_string(r.status));
  o.unit = std::string(to_string(r.budget.unit));
  o.size_in = r.input_size.sizes.in(r.budget.unit);
  o.size_out = r.output_size.sizes.in(r.budget.unit);
  o.window = r.window;
  o.limit = r.budget.limit;
  for (const auto& s : r.stages) {
    o.stage_statuses.emplace_back(s.stage, std::string(to_string(s.status)));
    o.stage_us.push_back(s.wall_us);
    o.stages_us += s.wall_us;
  }
  // What this call did itself: a continued history carries earlier calls' compaction unchanged.
  o.changed = r.first_changed_message.has_value();
  for (const auto& s : r.stages)
    for (const auto& a : o.changed ? s.archived : std::vector<ArchivedReceipt>{}) {
      if (o.receipts.size() < JobOutcome::kMaxReceipts) o.receipts.push_back(a.receipt);
      ++o.receipt_count;
    }
  if (r.gate) {
    o.gated = true;
    o.gate_commit = r.gate->commit;
    o.gate_saved_usd = r.gate->saved_usd;
    o.gate_broken_usd = r.gate->broken_usd;
  }
  if (r.status == RunStatus::declined) o.warning = "cost gate " + r.gate->to_string();
  if (r.status == RunStatus::over_budget)
    o.warning = fmt::format("still over budget: {} {} after the pipeline, limit {}", o.size_out, o.unit, o.limit);
  if (r.status == RunStatus::deferred)
    for (const auto& s : r.stages)
      if (s.reason.starts_with("deferred: ")) o.warning = s.reason;
}

}  // namespace

CompactionResult run_compaction(Pipeline& pipeline, store::Store& store, const wire::WireFormat& format,
                                std::string body, bool prompt_too_long, ChildProgress* progress, StageLogger& log,
                                const std::string& model) {
  const ContinuityStore continuity(store);
  CompactionResult out;
  JobOutcome& o = out.outcome;
  o.unit = std::string(to_string(pipeline.config().budget.unit));
  o.model = model.empty() ? format.model_named_in(body) : model;
  const std::string native = format.native_context(body);
  auto t = Clock::now();
  auto request = format.read(std::move(body), "request");
  o.parse_us = us_since(t);
  if (!request) {
    o.result = JobOutcome::refused;
    o.warning = "input refused, forwarded unchanged: " + first_line(request.error().message);
    return out;
  }
  if (std::string why = (*request)->pass_reason(); !why.empty()) {
    o.result = JobOutcome::passed;
    o.warning = std::move(why);
    return out;
  }
  const Continuation continuation((*request)->conversation());
  o.messages = continuation.request().size();

  t = Clock::now();
  const Resumed resumed = continuation.resume(format.name(), continuity.histories());
  const std::optional<SentHistory>& stored = resumed.stored;
  o.state_hit = stored.has_value();
  o.covered = stored ? stored->covered : 0;
  // A model's summary written since replaces its stand-in before the stages see the history.
  std::optional<StoredSummaries> summaries;
  if (pipeline.config().background_summaries()) summaries.emplace(store, pipeline.config());
  const Conversation input = summaries ? summaries->with_ready_summaries(resumed.input, log) : resumed.input;
  o.state_us = us_since(t);

  const std::vector<CheckerPtr> rules = format.rules();
  RunOptions options;
  options.prompt_too_long = prompt_too_long;
  options.input_name = "request";
  options.rules = &rules;
  options.open_archive = [&store](FileSystem& fs) { return store.open_run(fs); };
  options.model = o.model;
  options.openai = format.openai_tokenizer();
  options.native_context = native;
  if (summaries) options.background_summaries = &*summaries;
  if (stored) options.cache = cache_of(*stored, continuation.request());
  // A continued history that was compacted before is smaller than what the client sent: what the
  // call saves is counted against the client's.
  if (stored && !stored->unchanged) options.received = &continuation.request();
  if (progress != nullptr) {
    options.on_stage_start = [progress](const std::string& stage, const std::string& plugin) { progress->stage_started(stage, plugin); };
    options.on_stage_end = [progress] { progress->stage_finished(); };
  }
  RunReport r = pipeline.run(input, options, log);
  record_run(r, o);
  if (summaries) o.background_summaries = summaries->started(), o.summaries_replaced = summaries->replaced();
  o.size_received = r.received_size ? r.received_size->sizes.in(r.budget.unit) : o.size_in;
  const CallSavings saved = savings_of(pipeline.config(), r, continuation.request(), o.model, format.openai_tokenizer());
  o.saved_tokens = saved.tokens;
  o.saved_usd = saved.usd;
  if (r.status == RunStatus::bad_input) {
    o.result = JobOutcome::refused;
    o.warning = "input refused, forwarded unchanged: " + first_line(r.error);
    return out;
  }
  if (r.status == RunStatus::failed || !r.output) {
    o.warning = "pipeline failed, forwarded unchanged: " + first_line(r.error);
    return out;
  }

  t = Clock::now();
  auto committed = continuation.commit(resumed, *r.output, [&](const Conversation& c) { return (*request)->write(c); },
                                       continuity.histories());
  if (!committed) {
    o.warning = "pipeline failed, forwarded unchanged: " + first_line(committed.error().message);
    return out;
  }
  o.result = *committed ? JobOutcome::compacted : JobOutcome::unchanged;
  if (*committed) out.body = std::move(**committed);
  o.write_us = us_since(t);
  return out;
}

std::unique_ptr<store::Store> open_tenant_store(const PipelineConfig& config, const std::string& tenant) {
  auto opened = store::open_store(config.store, config.archive_dir, tenant);
  const ServeConfig serve = config.serve.value_or(ServeConfig{});
  opened->bound(store::TenantBounds{serve.tenant_max_bytes, store::is_key_tenant(tenant), serve.unverified_max_bytes, serve.unverified_ttl_s});
  return opened;
}

void report_store(JobOutcome& outcome, store::Store& store, std::string_view kind) {
  const store::StoreCounters& c = store.counters();
  JobOutcome::StoreReport& r = outcome.store;
  r.kind = std::string(kind);
  r.state_get_us = c.state_get_us;
  r.state_put_us = c.state_put_us;
  r.blobs_put_us = c.blobs_put_us;
  r.state_get_errors = c.state_get_errors;
  r.state_put_errors = c.state_put_errors;
  r.blob_errors = c.blob_errors;
  r.error = c.first_error;
  r.over_tenant_bound = c.over_tenant_bound;
  r.over_unverified_bound = c.over_unverified_bound;
  r.usage_bytes = c.usage_bytes;
  r.state_rejected = c.state_rejected;
  // Unverified when it wrote as such, or would have: its call's 2xx vouches for it either way.
  auto unknown = store.unverified();
  r.unverified = c.unverified || (unknown && *unknown);
  if (outcome.result == JobOutcome::failed && (c.blob_errors > 0 || !c.first_blob_error.empty())) {
    outcome.store_fault = true;
    // The blobs' error, not the first (a store that is down fails the state read first): this
    // one is why nothing was removed.
    outcome.warning = "the store could not archive what compaction would remove, forwarded as it came: " +
                      first_line(c.first_blob_error.empty() ? c.first_error : c.first_blob_error);
  }
}

}  // namespace compactor::serve
