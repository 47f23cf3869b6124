#include "host/pipeline.hpp"

#include "model/active_request.hpp"
#include "model/conversation_host.hpp"
#include "archive/archive_store.hpp"
#include "archive/folder_trust.hpp"
#include "loader/builtin_checkers.hpp"
#include "host/archived_receipts.hpp"
#include "host/call_triage.hpp"
#include "host/model_budget.hpp"
#include "host/stderr_logger.hpp"

#include <algorithm>
#include <chrono>

namespace compactor {
namespace {

// A stage's log lines start with its name.
class PrefixedLogger final : public StageLogger {
 public:
  PrefixedLogger(StageLogger& inner, std::string prefix) : inner_(inner), prefix_(std::move(prefix)) {}
  void log(LogLevel level, std::string_view message) override { inner_.log(level, prefix_ + std::string(message)); }

 private:
  StageLogger& inner_;
  std::string prefix_;
};

bool same_messages(const Conversation& a, const Conversation& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a.messages()[i] != b.messages()[i]) return false;
  return true;
}

std::optional<std::size_t> first_changed(const Conversation& a, const Conversation& b) {
  std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a.messages()[i] != b.messages()[i]) return i;
  if (a.size() != b.size()) return n;
  return std::nullopt;
}

std::string join_lines(const std::vector<Violation>& vs) {
  std::string out;
  for (const auto& v : vs) out += (out.empty() ? "" : "\n") + v.to_string();
  return out;
}

}  // namespace

Expected<Pipeline> Pipeline::build(PipelineConfig config, ExitCode* failure) {
  Pipeline p;
  p.config_ = std::make_unique<PipelineConfig>(std::move(config));
  bool refused = false;  // a factory refused its params: the config is wrong for it
  if (failure != nullptr) *failure = kExitPluginError;
  auto fail = [&](Error e) -> Expected<Pipeline> {
    if (failure != nullptr && refused) *failure = kExitBadInput;
    return e;
  };
  for (const CheckerEntryConfig& entry : p.config_->checkers) {
    if (entry.registered == nullptr) {
      CheckerPtr builtin = make_builtin_checker(entry.name);
      if (builtin == nullptr) return Error{p.config_->file + ": checkers.enabled: no checker \"" + entry.name + "\" is registered"};
      p.checkers_.push_back(std::move(builtin));
      continue;
    }
    auto checker = create_guarded_checker(*entry.registered, entry.params, &refused);
    if (!checker) return fail(Error{entry.location.to_string() + ": " + entry.yaml_path + ": " + checker.error().message});
    p.checkers_.push_back(std::move(checker).value());
  }
  p.default_rules_ = make_input_checkers();
  p.restore_phrase_ = restore_phrase(*p.config_);
  if (p.config_->summarizer != nullptr) {
    auto s = create_guarded_summarizer(*p.config_->summarizer, p.config_->summarizer_params, &refused);
    if (!s) return fail(s.error());
    p.summarizer_ = std::move(s).value();
    if (p.config_->background_summaries()) p.stand_in_ = make_extractive_summarizer();
  }
  auto build_list = [&refused](std::vector<PipelineEntryConfig>& entries, std::vector<BuiltStage>& out) -> std::optional<Error> {
    for (auto& e : entries) {
      auto instance = create_stage(*e.registered, e.params, &refused);
      if (!instance) return Error{e.location.to_string() + ": " + e.yaml_path + ": " + instance.error().message};
      out.push_back({&e, std::move(instance).value()});
    }
    return std::nullopt;
  };
  if (auto e = build_list(p.config_->pipeline, p.pipeline_)) return fail(*e);
  if (auto e = build_list(p.config_->on_prompt_too_long, p.on_prompt_too_long_)) return fail(*e);
  // The store refuses a folder others could write at its first put, and every stage that archives
  // then declines with that reason in the report: said once here, when `run`, `serve` or
  // `validate` starts, so that it is not found only by reading declines.
  if (auto distrust = archive_folder_distrust(p.config_->archive_dir))
    make_stderr_logger("")->warn("archive: " + *distrust + "; until then every stage that archives declines");
  for (const std::string& warning : p.config_->warnings) make_stderr_logger("")->warn(warning);
  return p;
}

RunReport Pipeline::run(const Conversation& unmetered, const RunOptions& options, StageLogger& log) {
  RunReport report = run_stages(unmetered, options, log);
  take_summarizer_calls(report);  // a run that ended before the gate
  return report;
}

// Model calls cost money whether or not their summary was used: every one is reported.
void Pipeline::take_summarizer_calls(RunReport& report) const {
  if (summarizer_ == nullptr) return;
  const PriceTable* prices = config_->prices.get();
  if (prices != nullptr) report.prices = prices->source + " (" + prices->date + ")";
  for (SummarizerCall& call : summarizer_->take_calls()) {
    PricedSummarizerCall priced{std::move(call), std::nullopt};
    if (const ModelPrice* price = prices != nullptr ? prices->find(priced.call.model) : nullptr)
      priced.cost_usd = price->cost(priced.call.input_tokens, 0, 0, priced.call.output_tokens);
    report.summarizer_calls.push_back(std::move(priced));
  }
}

// What every stage of one run shares.
struct Pipeline::RunState {
  const RunOptions& options;
  const RunBudget& budget;  // the config's, resolved for the request's model
  StageLogger& log;
  RunArchive& archive;
  std::vector<std::string> requests;
  std::vector<const Checker*> checkers;  // the config's and the API's rules, each once
  // Hysteresis: `over_budget` stages run only when the input crossed the limit, and then until the
  // history is down to the target, so the calls that follow only append (the prompt cache holds).
  bool triggered = false;
  // Where the gate's weighing starts: the input, or the history after the last forced cut (the
  // stages before it kept with it), and what the run had archived by then.
  std::optional<Conversation> forced = std::nullopt;
  RunArchive::Mark forced_mark = archive.mark();
};

namespace {

// The checkers that look at every candidate: the config's, except the Messages API's rules when
// another API's rules run instead (they are not its rules), then each rule the config lacks.
std::vector<const Checker*> stage_checkers(const std::vector<CheckerPtr>& configured, const std::vector<CheckerPtr>& rules) {
  auto among_rules = [&](std::string_view name) {
    return std::any_of(rules.begin(), rules.end(), [&](const CheckerPtr& r) { return r->name() == name; });
  };
  auto api_rule = [](std::string_view name) {
    const BuiltinChecker* b = PluginRegistry::instance().builtin_checker(name);
    return b != nullptr && b->traits.api_rule;
  };
  std::vector<const Checker*> out;
  for (const CheckerPtr& c : configured)
    if (among_rules(c->name()) || !api_rule(c->name())) out.push_back(c.get());
  for (const CheckerPtr& rule : rules)
    if (std::none_of(out.begin(), out.end(), [&](const Checker* c) { return c->name() == rule->name(); }))
      out.push_back(rule.get());
  return out;
}

// Why the entry's `when` keeps it from running on `committed`; nothing when it runs.
std::optional<std::string> skip_reason(const PipelineEntryConfig& entry, const Conversation& committed, const Budget& budget,
                                       bool triggered) {
  const std::uint64_t size = committed.size_in(budget.unit);
  const std::string unit(to_string(budget.unit));
  if (entry.when.kind == WhenKind::over_budget && !triggered)
    return "within budget (" + std::to_string(size) + " ≤ " + std::to_string(budget.limit) + " " + unit + ")";
  if (entry.when.kind == WhenKind::over_budget && size <= budget.target)
    return "at target (" + std::to_string(size) + " ≤ " + std::to_string(budget.target) + " " + unit + ")";
  if (entry.when.kind == WhenKind::messages_over && committed.size() <= entry.when.messages)
    return std::to_string(committed.size()) + " messages, not over " + std::to_string(entry.when.messages);
  return std::nullopt;
}

// What a candidate breaks. A system entry left without a place is refused even when the config
// leaves `structure` out: the host keeps them, so none is ever lost silently.
std::vector<Violation> violations_of(const Conversation& candidate, const CheckInput& check, const std::vector<const Checker*>& checkers) {
  std::vector<Violation> violations;
  for (const Checker* c : checkers) c->check(check, violations);
  if (!candidate.system_entries_placed() &&
      std::none_of(violations.begin(), violations.end(), [](const Violation& v) { return v.checker == "structure"; }))
    make_builtin_checker("structure")->check(check, violations);
  return violations;
}

}  // namespace

StageRunReport Pipeline::run_stage_on(BuiltStage& s, Conversation& committed, RunState& run) const {
  const PipelineEntryConfig& entry = *s.entry;
  StageRunReport sr;
  sr.stage = entry.stage;
  sr.plugin_file = entry.registered->file();
  sr.plugin_version = entry.registered->plugin != nullptr ? entry.registered->plugin->version : "";
  sr.summarizes = entry.registered->info->summarizes;
  sr.before = SizeSnapshot::of(committed);
  sr.after = sr.before;
  if (entry.when.kind == WhenKind::over_budget && run.triggered && !run.options.native_context.empty()) {
    sr.status = StageStatus::skipped;
    sr.reason = "deferred: " + run.options.native_context;
    return sr;
  }
  if (auto why = skip_reason(entry, committed, run.budget.budget, run.triggered)) {
    sr.status = StageStatus::skipped;
    sr.reason = std::move(*why);
    return sr;
  }

  PrefixedLogger stage_log(run.log, entry.stage + ": ");
  StageContext context(run.archive, stage_log);
  context.budget = run.budget.budget;
  context.tail = compute_protected_tail(committed, config_->recent_exchanges);
  context.requests = run.requests;
  context.summarizer = summarizer_.get();
  std::unique_ptr<Summarizer> background;
  if (run.options.background_summaries != nullptr && stand_in_ != nullptr) {
    background = make_background_summarizer(*run.options.background_summaries, *stand_in_);
    context.summarizer = background.get();
  }
  context.restore_via = restore_phrase_;

  // What the stage archives stays only if its candidate is committed (not declined, rejected
  // or unchanged).
  const RunArchive::Mark archive_mark = run.archive.mark();
  auto started = std::chrono::steady_clock::now();
  if (run.options.on_stage_start) run.options.on_stage_start(entry.stage, sr.plugin_file);
  auto result = run_stage(*s.instance, *entry.registered, committed, context);
  if (run.options.on_stage_end) run.options.on_stage_end();
  sr.wall_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();

  if (!result || result->kind() != StageResult::Kind::candidate) run.archive.revert_to(archive_mark);
  if (!result) {
    sr.status = StageStatus::failed;
    sr.reason = result.error().message;
    return sr;
  }
  // Nothing to do, or nothing that could be done safely (a decline): the conversation stays as it
  // was and the next stage runs. Only a rejection (a candidate that broke a rule) is subject to
  // on_violation.
  if (result->kind() != StageResult::Kind::candidate) {
    sr.status = result->declined() ? StageStatus::declined : StageStatus::unchanged;
    sr.reason = result->reason();
    return sr;
  }
  Conversation candidate = ConversationHost::in_frame_of(*result, committed);  // copies message pointers only
  if (same_messages(candidate, committed)) {
    run.archive.revert_to(archive_mark);  // nothing removed: what it archived is nobody's
    sr.status = StageStatus::unchanged;
    return sr;
  }
  CheckInput check{committed, candidate, context.tail, run.requests};
  check.unit = run.budget.budget.unit;
  check.may_touch_tail = entry.registered->info->may_touch_tail;
  check.may_grow = entry.registered->info->may_grow;
  check.archive = &run.archive;
  sr.violations = violations_of(candidate, check, run.checkers);
  if (!sr.violations.empty()) {
    run.archive.revert_to(archive_mark);
    sr.status = StageStatus::rejected;
    return sr;
  }
  sr.archived = archived_receipts(run.archive.receipts_since(archive_mark), committed, candidate, run.archive);
  committed = std::move(candidate);
  sr.status = StageStatus::committed;
  sr.after = SizeSnapshot::of(committed);
  return sr;
}

RunReport Pipeline::run_stages(const Conversation& unmetered, const RunOptions& options, StageLogger& log) {
  const RunBudget resolved = run_budget(*config_, options.model, options.openai);
  const Budget& budget = resolved.budget;
  // Under budget.unit: tokens every conversation of the run counts through the run's meter.
  const bool metered = budget.unit == SizeUnit::tokens && resolved.meter != nullptr;
  const Conversation input = metered ? ConversationHost::with_meter(unmetered, resolved.meter) : unmetered;
  RunReport report;
  report.config_file = config_->file;
  report.input = options.input_name;
  report.reason = options.prompt_too_long ? "prompt_too_long" : "before_call";
  report.budget = budget;
  report.model = options.model;
  report.window = resolved.window;
  report.window_from = resolved.window_from;
  if (resolved.price != nullptr) report.input_usd_per_mtok = resolved.price->input;
  if (config_->model_meters != nullptr) report.meter = resolved.meter_name;  // the model's, found for this run
  report.input_size = SizeSnapshot::of(input);
  if (options.received != nullptr)
    report.received_size = SizeSnapshot::of(metered ? ConversationHost::with_meter(*options.received, resolved.meter) : *options.received);
  report.resolved_pipeline = print_pipeline(*config_);

  // The input must be a history the API accepts, whatever checkers the config enables, and the
  // API's rules run after every stage: the config's own (structure, pairing, …) for the Messages
  // API, in their place; another API's rules instead of them, since those are not its rules.
  const std::vector<CheckerPtr>& rules = options.rules != nullptr ? *options.rules : default_rules_;
  if (auto violations = run_checkers(rules, CheckInput{input, input, compute_protected_tail(input, 0), {}}); !violations.empty()) {
    report.status = RunStatus::bad_input;
    report.error = join_lines(violations);
    return report;
  }

  // Every removal of this run goes through one archive; it is made durable (commit) before the
  // output can be written, and rolled back (by its destructor) when nothing will be written.
  FileSystem& fs = options.file_system != nullptr ? *options.file_system : real_file_system();
  std::unique_ptr<RunArchive> opened = options.open_archive ? options.open_archive(fs) : nullptr;
  std::optional<ArchiveStore> folder;
  if (!opened) folder.emplace(options.archive_dir.value_or(config_->archive_dir), fs);
  RunArchive& archive = opened ? *opened : static_cast<RunArchive&>(*folder);
  RunState run{options, resolved, log, archive,
               options.request ? std::vector<std::string>{*options.request} : find_active_request(input).texts,
               stage_checkers(checkers_, rules), over_trigger(input, budget)};
  Conversation committed = input;
  bool rejected = false;  // a stage was rejected and skipped (on_violation: skip)
  for (BuiltStage& s : options.prompt_too_long ? on_prompt_too_long_ : pipeline_) {
    report.stages.push_back(run_stage_on(s, committed, run));
    const StageRunReport& sr = report.stages.back();
    if (sr.status == StageStatus::committed && s.entry->registered->info->forced) {
      run.forced = committed;
      run.forced_mark = archive.mark();
    }
    if (sr.status == StageStatus::failed) {
      report.status = RunStatus::failed;
      report.error = sr.reason;
      return report;
    }
    if (sr.status != StageStatus::rejected) continue;
    if (config_->on_violation == ViolationPolicy::abort) {
      report.status = RunStatus::aborted;
      break;
    }
    rejected = true;
  }
  take_summarizer_calls(report);  // the gate weighs what they cost
  if (report.status != RunStatus::aborted) gate(input, committed, run, report);

  if (auto durable = archive.commit(); !durable) {
    report.status = RunStatus::failed;
    report.error = durable.error().message;
    return report;
  }
  report.first_changed_message = first_changed(input, committed);
  if (report.status != RunStatus::aborted) {
    // A skipped rejection is reported as what it is, even when the output fits; so is a refused
    // call (prompt_too_long) that nothing could compact: the refusal goes back to the caller.
    const bool over = committed.size_in(budget.unit) > budget.limit;
    const bool uncompacted = options.prompt_too_long && !report.first_changed_message;
    const bool declined = report.gate && !report.gate->commit;
    const bool deferred = over && !options.prompt_too_long && !options.native_context.empty();
    report.status = rejected     ? RunStatus::rejected
                    : declined   ? RunStatus::declined
                    : deferred   ? RunStatus::deferred
                    : over       ? RunStatus::over_budget
                    : uncompacted ? RunStatus::not_compacted
                                  : RunStatus::ok;
  }
  report.output_size = SizeSnapshot::of(committed);
  report.output = committed;
  return report;
}

namespace {

// The tokens of `c`'s fixed part (system, tools) and of its first `messages` messages.
std::uint64_t prefix_size(const Conversation& c, std::size_t messages, SizeUnit unit) {
  std::uint64_t size = c.frame().fixed.in(unit);
  for (std::size_t i = 0; i < std::min(messages, c.size()); ++i) size += c.size_of(c[i], unit);
  return size;
}

// The cache lifetime the request asks for (requested_cache_lifetime), read from the body around
// the messages, `system`, `tools` and the messages; 0 when it asks for none.
std::uint64_t request_cache_lifetime(const Conversation& c) {
  const FrameLayout& layout = ConversationHost::layout(c.frame());
  std::uint64_t lifetime = std::max(requested_cache_lifetime(layout.prefix), requested_cache_lifetime(layout.suffix));
  for (std::string_view part : layout.fixed_json) lifetime = std::max(lifetime, requested_cache_lifetime(part));
  for (const MessagePtr& m : c.messages()) lifetime = std::max(lifetime, requested_cache_lifetime(m->raw()));
  return lifetime;
}

}  // namespace

// The gate weighs what the run rewrote, before the call and in tokens, when the model has a price:
// every stage's rewrite, whatever its `when`, from the input or from the last forced cut (the
// model's own `compact` call, a newest batch too large to send), which it never declines; a run
// after a refusal decides for itself. The summarizer's calls count against the compaction. Past
// halfway from the limit to the window the compaction is committed whatever it costs: a refused
// call costs more.
void Pipeline::gate(const Conversation& input, Conversation& committed, RunState& run, RunReport& report) const {
  const RunBudget& rb = run.budget;
  const Conversation& base = run.forced ? *run.forced : input;
  const auto change = first_changed(base, committed);
  if (run.options.prompt_too_long || rb.price == nullptr || rb.budget.unit != SizeUnit::tokens || !change) return;
  const SizeUnit unit = SizeUnit::tokens;
  CacheState cache = run.options.cache.value_or(CacheState{});
  if (cache.lifetime_s == 0) cache.lifetime_s = request_cache_lifetime(input);
  const ModelPrice price = cache.lifetime_s > 0 ? rb.price->with_cache_lifetime(cache.lifetime_s) : *rb.price;
  // The cache holds the input's first messages; the base keeps those before its own first change.
  const std::size_t kept_by_base = std::min(cache.cached_messages, first_changed(input, base).value_or(input.size()));
  const std::size_t kept = std::min(kept_by_base, first_changed(input, committed).value_or(input.size()));
  GateInput in;
  in.size_in = base.size_in(unit);
  in.size_out = committed.size_in(unit);
  in.cached_in = prefix_size(input, kept_by_base, unit);
  in.cached_kept = prefix_size(input, kept, unit);
  in.horizon = gate_horizon(cache);
  for (const PricedSummarizerCall& call : report.summarizer_calls) in.summarizer_usd += call.cost_usd.value_or(0.0);
  const bool warm = run.options.cache && cache_warm(cache, price.cache_lifetime_s);
  report.gate = weigh_compaction(in, price, warm);
  const bool must = rb.window > 0 && in.size_in > rb.budget.limit + (rb.window - std::min(rb.window, rb.budget.limit)) / 2;
  if (report.gate->commit || must) {
    report.gate->commit = true;
    return;
  }
  run.archive.revert_to(run.forced_mark);
  committed = base;
}

}  // namespace compactor
