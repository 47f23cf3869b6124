#include "bench/replay.hpp"

#include "session/continuation.hpp"

#include "loader/builtin_checkers.hpp"
#include "compactor/protected_tail.hpp"
#include "model/active_request.hpp"
#include "model/conversation_host.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace compactor::bench {

namespace json = boost::json;

namespace {

class NoSyncFileSystem final : public FileSystem {
 public:
  int open_exclusive(const std::string& path, int mode) override { return real().open_exclusive(path, mode); }
  ssize_t write(int fd, const void* data, std::size_t size) override { return real().write(fd, data, size); }
  ssize_t read_at(int fd, void* data, std::size_t size, off_t offset) override {
    return real().read_at(fd, data, size, offset);
  }
  int close(int fd) override { return real().close(fd); }
  int rename(const std::string& from, const std::string& to) override { return real().rename(from, to); }
  int mkdir(const std::string& path, int mode) override { return real().mkdir(path, mode); }
  int unlink(const std::string& path) override { return real().unlink(path); }
  int sync_filesystem(const std::string&) override { return 0; }
  bool exists(const std::string& path) override { return real().exists(path); }

 private:
  static FileSystem& real() { return real_file_system(); }
};

// Whether the prompt cache sees the same message: the same bytes once the breakpoints a client
// moves are cut (session/continuation.hpp: on blocks, never inside a tool's input).
bool same_for_cache(const MessagePtr& a, const MessagePtr& b) {
  if (a == b || a->raw() == b->raw()) return true;
  return without_breakpoints(a->raw()) == without_breakpoints(b->raw());
}

}  // namespace

std::uint64_t to_nusd(double usd) { return usd <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(usd * 1e9)); }
double to_usd(std::uint64_t nusd) { return static_cast<double>(nusd) / 1e9; }

FileSystem& scratch_file_system() {
  static NoSyncFileSystem fs;
  return fs;
}

std::size_t shared_prefix(const Conversation& previous, const Conversation& request) {
  std::size_t n = std::min(previous.size(), request.size()), k = 0;
  while (k < n && same_for_cache(previous.messages()[k], request.messages()[k])) ++k;
  return k;
}

namespace {

// One pipeline run on the request `sent`, which becomes the run's output when there is one; the
// stages' outcomes and the summarizer's calls are recorded. Returns the run's status, or
// "failed" when it gave no output: the agent then sends its history as it was.
std::string run_pipeline(Pipeline& pipeline, bool prompt_too_long, std::size_t c, const ReplaySetup& setup, const CacheState& cache,
                         StageLogger& log, Conversation& sent, CallRecord& call, SessionReplay& out) {
  RunOptions options;
  options.rules = setup.rules;
  options.prompt_too_long = prompt_too_long;
  options.model = setup.model;
  options.openai = setup.openai;
  options.cache = cache;
  options.input_name = out.session + " call " + std::to_string(c + 1);
  options.archive_dir = setup.archive_dir;
  options.file_system = &scratch_file_system();
  auto started = std::chrono::steady_clock::now();
  RunReport r = pipeline.run(sent, options, log);
  call.pipeline_us +=
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  out.limit = r.budget.limit;
  out.limit_unit = std::string(to_string(r.budget.unit));
  for (const auto& s : r.stages) {
    if (s.status == StageStatus::skipped) continue;
    if (!call.stages.empty()) call.stages += ' ';
    call.stages += s.stage + ":" + std::string(to_string(s.status));
    if (s.status == StageStatus::committed && s.summarizes) ++out.summaries;
    if (s.status == StageStatus::rejected) {
      ++out.rejections;
      out.errors.push_back("call " + std::to_string(c + 1) + ": " + s.stage + " rejected: " +
                           (s.violations.empty() ? std::string() : first_line(s.violation_lines().front())));
    }
  }
  for (const auto& sc : r.summarizer_calls) {
    ++out.summarizer_calls;
    out.summarizer_input += sc.call.input_tokens;
    out.summarizer_output += sc.call.output_tokens;
    std::optional<double> cost = sc.cost_usd;
    if (const ModelPrice* p = !cost && setup.prices != nullptr ? setup.prices->find(sc.call.model) : nullptr)
      cost = p->cost(sc.call.input_tokens, 0, 0, sc.call.output_tokens);
    out.summarizer_cost_nusd += to_nusd(cost.value_or(0.0));
  }
  if (r.gate && !r.gate->commit) {
    ++out.declines;
    call.stages += std::string(call.stages.empty() ? "" : " ") + "gate:declined";
  }
  if (r.status == RunStatus::bad_input || r.status == RunStatus::failed || !r.output) {
    ++out.failures;
    out.errors.push_back("call " + std::to_string(c + 1) + ": " + std::string(to_string(r.status)) + ": " + first_line(r.error));
    return std::string("failed");
  }
  if (r.first_changed_message) call.compacted = true;
  sent = *r.output;
  if (sent.frame().meter != setup.meter) sent = ConversationHost::with_meter(sent, setup.meter);
  return std::string(to_string(r.status));
}

// A request the pipeline left over budget: counted apart when its protected tail alone is over
// the limit, since no policy could fit it.
void count_over_budget(const Conversation& sent, const PipelineConfig& config, SessionReplay& out) {
  const ProtectedTail tail = compute_protected_tail(sent, config.recent_exchanges);
  std::uint64_t alone = sent.frame().fixed.in(config.budget.unit);
  for (std::size_t i = tail.begin; i < sent.size(); ++i) alone += sent.size_of(sent[i], config.budget.unit);
  // … and the request, which a summary quotes verbatim, as a message of its own.
  json::array quoted;
  for (const std::string& text : find_active_request(sent).texts) quoted.push_back(json::object{{"type", "text"}, {"text", text}});
  if (auto request = Message::from_json(json::object{{"role", "user"}, {"content", std::move(quoted)}}))
    alone += sent.size_of(**request, config.budget.unit);
  ++(alone > config.budget.limit ? out.over_budget_tail : out.over_budget);
}

// The tokens of a call: sent, read from and written to the prompt cache, and the answer's;
// added to the session's totals. `previous` is the request of the call before, if any.
void count_tokens(const Conversation* previous, const Conversation& sent, std::uint64_t output,
                  std::uint64_t min_cacheable, CallRecord& call, SessionReplay& out) {
  call.messages = sent.size();
  call.sent = sent.size_in(SizeUnit::tokens);
  std::uint64_t prefix_tokens = 0;
  if (previous != nullptr) {
    call.cached_messages = shared_prefix(*previous, sent);
    prefix_tokens = sent.frame().fixed.tokens;
    for (std::size_t i = 0; i < call.cached_messages; ++i) prefix_tokens += sent.size_of(sent[i], SizeUnit::tokens);
  }
  // The agent marks the end of each request for caching: the prefix is read when it is long
  // enough to have been cached, the rest written when the request is long enough to be.
  call.cache_read = prefix_tokens >= min_cacheable ? prefix_tokens : 0;
  call.cache_write = call.sent >= min_cacheable ? call.sent - call.cache_read : 0;
  call.output = output;
  const std::uint64_t uncached = call.sent - call.cache_read - call.cache_write;
  out.sent += call.sent;
  out.cache_read += call.cache_read;
  out.cache_write += call.cache_write;
  out.uncached += uncached;
  out.output += call.output;
}

// Each call's request is checked as the next call's input; the last one (of call `calls`) is
// checked here.
void check_last_request(const Conversation& last, std::size_t calls, const ReplaySetup& setup, SessionReplay& out) {
  const CheckInput input{last, last, compute_protected_tail(last, 0), {}};
  auto violations = setup.rules != nullptr ? run_checkers(*setup.rules, input) : run_checkers(make_input_checkers(), input);
  if (!violations.empty()) {
    ++out.failures;
    out.errors.push_back("call " + std::to_string(calls) + ": the request sent: " + first_line(violations.front().to_string()));
  }
}

}  // namespace

namespace {

// The session's cost, priced from its token totals (prices are linear), and its split.
void price_totals(const ModelPrice& p, SessionReplay& out) {
  out.read_nusd = to_nusd(p.cost(0, 0, out.cache_read, 0));
  out.write_nusd = to_nusd(p.cost(0, out.cache_write, 0, 0));
  out.uncached_nusd = to_nusd(p.cost(out.uncached, 0, 0, 0));
  out.output_nusd = to_nusd(p.cost(0, 0, 0, out.output));
  out.cost_nusd = out.read_nusd + out.write_nusd + out.uncached_nusd + out.output_nusd;
  const Evidence& e = out.evidence;
  out.evidence.refetch_nusd = to_nusd(p.cost(0, e.refetch_write, e.refetch_read, e.refetch_output));
}

}  // namespace

std::vector<std::size_t> call_answers(const Conversation& session) {
  std::vector<std::size_t> answers;
  for (std::size_t i = 1; i < session.size(); ++i)
    if (session[i].role() == Role::assistant) answers.push_back(i);
  return answers;
}

namespace {

// Seconds between two answers the log timed; 0 when either has no time.
std::int64_t idle_seconds(const std::map<std::size_t, std::int64_t>& times, std::size_t before, std::size_t now) {
  auto a = times.find(before), b = times.find(now);
  return a == times.end() || b == times.end() ? 0 : (b->second - a->second) / 1000;
}

}  // namespace

SessionReplay replay_session(const Conversation& session, Pipeline* pipeline, const ReplaySetup& setup, StageLogger& log) {
  SessionReplay out;
  out.session = setup.session;
  out.model = setup.model;
  out.meter = setup.meter_name;
  out.window = setup.window;
  const Conversation original = ConversationHost::with_meter(session, setup.meter);
  const std::vector<std::size_t> answers = call_answers(original);
  std::optional<EvidenceMeter> evidence;
  if (setup.evidence != nullptr) evidence.emplace(*setup.evidence);
  const std::size_t last = answers.empty() ? 0 : answers.size() - 1, median = last / 2;
  const std::uint64_t min_cacheable = setup.price != nullptr ? setup.price->min_cacheable_tokens : 1024;
  const std::uint64_t lifetime = setup.price != nullptr ? setup.price->cache_lifetime_s : 300;
  std::map<std::string, std::string> blobs;

  // The rule of a living session (session/continuation.hpp), as serve applies it: each call's
  // request is the whole history up to the answer, and the pipeline runs on what was sent for
  // the previous call plus what arrived since.
  const std::vector<SystemEntry>& entries = original.frame().system_entries;
  std::optional<SentHistory> sent_before;
  std::optional<Conversation> previous;
  for (std::size_t c = 0; c < answers.size(); ++c) {
    std::vector<std::size_t> slots;
    for (std::size_t k = 0; k < entries.size() && entries[k].slot <= answers[c]; ++k) slots.push_back(entries[k].slot);
    std::vector<MessagePtr> prefix(original.messages().begin(), original.messages().begin() + static_cast<std::ptrdiff_t>(answers[c]));
    const Continuation continuation(
        ConversationHost::with_first_system_entries(original, slots.size(), std::move(prefix), std::move(slots)));
    const Conversation input = continuation.input(sent_before ? &*sent_before : nullptr);
    CallRecord call;
    Conversation sent = input;
    // The previous call's request is in the cache while the gap since it is under its lifetime.
    const std::int64_t idle_s = c > 0 ? idle_seconds(setup.recorded_time, answers[c - 1], answers[c]) : 0;
    const bool cold = static_cast<std::uint64_t>(std::max<std::int64_t>(0, idle_s)) >= lifetime;
    const CacheState cache{previous && !cold ? shared_prefix(*previous, input) : 0, c, idle_s};
    std::string status = pipeline != nullptr ? run_pipeline(*pipeline, false, c, setup, cache, log, sent, call, out) : "ok";
    if (sent.size_in(SizeUnit::tokens) > setup.window) {
      // The API refuses the request; the agent compacts reactively, once, and sends again.
      call.refused = true;
      ++out.refusals;
      if (pipeline != nullptr) status = run_pipeline(*pipeline, true, c, setup, cache, log, sent, call, out);
      if (sent.size_in(SizeUnit::tokens) > setup.window) ++out.over_window;
    }
    if (status == "over_budget") count_over_budget(sent, pipeline->config(), out);
    if (call.compacted) ++out.compactions;

    auto recorded = setup.recorded_output.find(answers[c]);
    const std::uint64_t output =
        recorded != setup.recorded_output.end() ? recorded->second : original.size_of(original[answers[c]], SizeUnit::tokens);
    count_tokens(previous && !cold ? &*previous : nullptr, sent, output, min_cacheable, call, out);
    if (pipeline != nullptr && pipeline->config().budget.unit != SizeUnit::tokens) call.budget_size = sent.size_in(pipeline->config().budget.unit);
    if (evidence) evidence->measure(c, sent, call.sent, out.evidence);

    if (c == median || c == last) {
      auto probes = retention_probes(original, answers[c]);
      Retention r = measure_retention(sent, probes, fact_probes(original, answers[c]), setup.archive_dir, blobs);
      r.call = c + 1;
      if (c == median) out.median = r;
      if (c == last) out.last = std::move(r);
    }
    out.calls.push_back(std::move(call));
    if (setup.on_call) setup.on_call(c, sent);
    sent_before = SentHistory{answers[c], false, sent.messages(), sent.system_slots()};
    previous = std::move(sent);
  }
  if (setup.price != nullptr) price_totals(*setup.price, out);
  if (previous) check_last_request(*previous, answers.size(), setup, out);
  return out;
}

}  // namespace compactor::bench
