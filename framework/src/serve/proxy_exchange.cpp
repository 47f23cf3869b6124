#include "serve/proxy_exchange.hpp"

#include "serve/answer_hold.hpp"
#include "serve/fast_path.hpp"
#include "serve/outcome_headers.hpp"
#include "serve/tenant.hpp"
#include "serve/upstream_url.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/string.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <tuple>

namespace compactor::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

// The store: each operation's latency and failures; the first failure said once (a store that is
// down would otherwise say it on every request).
void record_store(Metrics& m, const JobOutcome::StoreReport& st) {
  for (const auto& [op, us, errors] : {std::tuple{"state_get", st.state_get_us, st.state_get_errors},
                                        std::tuple{"state_put", st.state_put_us, st.state_put_errors},
                                        std::tuple{"blobs_put", st.blobs_put_us, st.blob_errors}}) {
    if (us >= 0) m.observe("compactor_serve_store_seconds", fmt::format("kind=\"{}\",op=\"{}\"", st.kind, op), static_cast<double>(us) / 1e6);
    if (errors > 0) m.add("compactor_serve_store_errors_total", fmt::format("op=\"{}\"", op), errors);
  }
  if (st.over_tenant_bound > 0) m.add("compactor_serve_store_full_total", "bound=\"tenant\"", st.over_tenant_bound);
  if (st.over_unverified_bound > 0) m.add("compactor_serve_store_full_total", "bound=\"unverified\"", st.over_unverified_bound);
  if (st.state_rejected > 0) m.add("compactor_serve_state_rejected_total", "", st.state_rejected);
  static std::atomic<bool> said{false};
  if (!st.error.empty() && !said.exchange(true))
    spdlog::warn("serve: the store failed, and requests go on without it (said once; compactor_serve_store_errors_total counts "
                 "every failure): {}", st.error);
}

class Exchange final : public UpstreamListener,
                       public StreamFeeder,
                       public AnswerHold::Sink,
                       public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(ProxyShared& shared, std::shared_ptr<const Deployment> d, UpstreamPool& pool, Request request,
           std::shared_ptr<HttpSession> session, ProxyRoute route, std::string tenant)
      : shared_(shared),
        d_(std::move(d)),
        pool_(pool),
        session_(std::move(session)),
        route_(std::move(route)),
        tenant_(std::move(tenant)),
        method_(request.method_string()),
        target_(request.target()),
        started_(Clock::now()) {
    client_body_ = std::make_shared<const std::string>(std::move(request.body()));
    for (const auto& f : request)
      if (!hop_by_hop(f.name_string())) header_lines_.push_back(std::string(f.name_string()) + ": " + std::string(f.value()));
    path_ = target_.substr(0, target_.find('?'));
    shared_.in_flight.fetch_add(1);
  }
  ~Exchange() override { shared_.in_flight.fetch_sub(1); }

  void start() {
    guarded("exchange", [&] { begin(); });
  }

  void on_head(int status, Headers headers) override;
  bool on_body(std::string_view bytes) override;
  void on_done(const std::string& error, long new_connections) override {
    guarded("exchange", [&] { finish(error, new_connections); });
  }
  void on_writable() override {
    if (transfer_) pool_.resume(*transfer_);
  }
  void on_client_gone() override;

  // Where the answer goes once it is the client's (AnswerHold decides when).
  void begin_stream() override { begin_streaming(); }
  bool behind() const override { return session_->behind(); }  // the pool pauses the call until on_writable()
  void write(std::string_view bytes) override { session_->write(bytes); }

 private:
  // Every way into the exchange from an event loop's handler goes through here: whatever it
  // throws ends this exchange alone (fail()), never the thread that runs every other one.
  template <typename F>
  void guarded(const char* where, F&& work) {
    try {
      work();
    } catch (const std::exception& e) {
      fail(where, e.what());
    } catch (...) {
      fail(where, "an exception that is no std::exception");
    }
  }
  void fail(const char* where, std::string_view what);
  void begin();
  void finish(const std::string& error, long new_connections);
  void compact(bool prompt_too_long, std::function<void(JobRun)> then);
  void on_compacted(JobRun run);
  void on_retry_compacted(JobRun run);
  void record(const JobOutcome& c, const std::string& route);
  void forward(std::shared_ptr<const std::string> body, Headers extra);
  void begin_streaming();
  void answer_buffered();
  void log_done();

  ProxyShared& shared_;
  std::shared_ptr<const Deployment> d_;
  UpstreamPool& pool_;
  std::shared_ptr<HttpSession> session_;
  ProxyRoute route_;
  std::string tenant_, method_, target_, path_;
  std::vector<std::string> header_lines_;
  std::shared_ptr<const std::string> client_body_, sent_;
  std::shared_ptr<UpstreamPool::Transfer> transfer_;
  std::shared_ptr<QueuedJob> job_;                     // submitted and not yet back
  std::shared_ptr<asio::steady_timer> queue_timer_;    // its serve.queue_timeout_ms
  Headers extra_, upstream_headers_;
  AnswerHold hold_{route_.compacting};
  int status_ = 0;
  bool retried_ = false, gone_ = false;
  std::string error_;
  std::string path_taken_ = "none", why_;  // fast or worker, and why a worker ran
  JobOutcome outcome_;
  Clock::time_point started_, forwarding_;
  std::int64_t compact_us_ = 0, queue_us_ = 0, first_byte_us_ = -1;  // compact_us_: the queue's wait and the worker
};

// Counted and logged by the server; the client gets the proxy's 502 when nothing of the answer
// went out yet, else the connection is closed (a cut answer is never taken for a whole one).
void Exchange::fail(const char* where, std::string_view what) {
  shared_.fault(where, fmt::format("{} {}: tenant={}: {}", method_, path_, tenant_name(tenant_), what));
  if (transfer_) pool_.cancel(*transfer_);
  transfer_.reset();
  if (gone_) return;
  gone_ = true;  // nothing more of this exchange reaches the client
  if (session_->answer_begun()) {
    session_->abort();
    return;
  }
  wire::ErrorReply e = route_.shape->error_reply(wire::ProxyError::upstream_failed, "compactor serve: the request failed inside serve");
  session_->close_after_answer();
  session_->reply(Reply{e.status, e.body, "application/json", {}});
}

// The client left: a call still waiting for a pipeline leaves the queue now, one compacting has
// its result dropped, and the upstream call is never made for nobody (an agent that timed out
// and retried would pay twice); one already made is cancelled.
void Exchange::on_client_gone() {
  gone_ = true;
  const char* during = "upstream";
  if (job_) {
    if (shared_.queue.withdraw(job_)) {
      during = "queued";
      queue_timer_->cancel();
    } else {
      during = "compacting";
    }
    job_.reset();
  }
  shared_.metrics.add("compactor_serve_client_gone_total", fmt::format("during=\"{}\"", during));
  spdlog::info("serve: {} {}: tenant={}: the client left while its call was {}", method_, path_, tenant_name(tenant_), during);
  if (transfer_) pool_.cancel(*transfer_);
  transfer_.reset();
}

void Exchange::begin() {
  session_->set_feeder(weak_from_this());
  if (route_.compacting == nullptr) {
    forward(client_body_, route_.extra);
    return;
  }
  if (auto why = route_.compacting->passed_through(*client_body_)) {
    route_.place.reset();  // no pipeline: its place goes to the next request
    spdlog::info("serve: POST {}: tenant={}: passed through untouched: {}", path_, tenant_name(tenant_), *why);
    shared_.metrics.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"passed\"", route_.label));
    forward(client_body_, {{"x-compactor-status", "passed"}, {"x-compactor-warning", header_safe(*why)}});
    return;
  }
  compact(false, [self = shared_from_this()](JobRun run) {
    self->guarded("exchange", [&] { self->on_compacted(std::move(run)); });
  });
}

// The compaction waits for a pipeline in the queue and runs on a queue thread; its result comes
// back to this connection's thread. Past serve.queue_timeout_ms the wait is given up: the request
// goes out as it came.
void Exchange::compact(bool prompt_too_long, std::function<void(JobRun)> then) {
  const ServeConfig& s = d_->settings.serve;
  auto executor = session_->executor();
  auto timer = std::make_shared<asio::steady_timer>(executor, std::chrono::milliseconds(s.queue_timeout_ms));
  auto job = std::make_shared<QueuedJob>();
  const auto queued = Clock::now();
  job->run = [&metrics = shared_.metrics, fault = shared_.fault, await_vouch = shared_.await_vouch, d = d_, body = client_body_,
              format = route_.compacting, tenant = tenant_, model = route_.compacting->model_in_path(path_), prompt_too_long, executor,
              then, timer, queued]() {
    if (await_vouch) await_vouch(tenant);
    const std::int64_t waited = us_since(queued);
    metrics.observe("compactor_serve_queue_seconds", "", static_cast<double>(waited) / 1e6);
    const auto began = Clock::now();
    JobRun run;
    try {
      // A call no stage can act on needs no worker (a retry after a refusal always does).
      std::string why = "the upstream refused the context";
      std::optional<JobRun> fast = prompt_too_long ? std::nullopt : run_without_worker(*d, *format, *body, tenant, model, why);
      if (fast) {
        run = std::move(*fast);
      } else {
        run = d->zygote->run(Job{std::string(format->name()), prompt_too_long, tenant, model, {}}, *body,
                             std::chrono::milliseconds(d->settings.serve.request_timeout_ms));
        run.why = std::move(why);
        metrics.observe("compactor_serve_worker_seconds", "", static_cast<double>(us_since(began)) / 1e6);
      }
    } catch (const std::exception& e) {  // fail open, as for a worker that crashed
      fault("pipeline_job", e.what());
      run = JobRun{};
      run.outcome.result = JobOutcome::failed;
      run.outcome.warning = fmt::format("pipeline failed, forwarded unchanged: serve could not run it: {}", e.what());
    }
    metrics.observe("compactor_serve_path_seconds", fmt::format("path=\"{}\"", run.path), static_cast<double>(us_since(began)) / 1e6);
    run.queue_us = waited;
    asio::post(executor, [then, timer, run = std::move(run)]() mutable {
      timer->cancel();
      then(std::move(run));
    });
  };
  // Given up at the deadline: out of the queue at once, its body with it.
  timer->async_wait([job, then, timeout = s.queue_timeout_ms, &queue = shared_.queue, &metrics = shared_.metrics](const boost::system::error_code& ec) {
    if (ec || !queue.withdraw(job)) return;
    metrics.add("compactor_serve_rejections_total", "reason=\"queue_timeout\"");
    JobRun run;
    run.outcome.result = JobOutcome::failed;
    run.outcome.warning = fmt::format("no pipeline worker was free within serve.queue_timeout_ms ({} ms): forwarded unchanged", timeout);
    then(std::move(run));
  });
  job_ = job;
  queue_timer_ = timer;
  shared_.queue.submit(std::move(job), std::move(route_.place));
}

void Exchange::record(const JobOutcome& c, const std::string& route) {
  Metrics& m = shared_.metrics;
  // An API key no upstream answer has vouched for takes none of the bounded tenant labels.
  const std::string tenant = c.store.unverified ? std::string("unverified") : shared_.tenant_label(tenant_);
  m.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"{}\"", route, to_string(c.result)));
  m.add("compactor_serve_status_total", fmt::format("route=\"{}\",status=\"{}\"", route, c.status_header()));
  m.add("compactor_serve_tenant_requests_total", fmt::format("tenant=\"{}\"", label_value(tenant)));
  if (c.gated) {
    const std::string decision = fmt::format("decision=\"{}\"", c.gate_commit ? "committed" : "declined");
    m.add("compactor_serve_gate_total", decision);
    m.add("compactor_serve_gate_saved_usd_total", decision, c.gate_saved_usd);
    m.add("compactor_serve_gate_broken_usd_total", decision, c.gate_broken_usd);
  }
  const bool ran = c.result == JobOutcome::compacted || c.result == JobOutcome::unchanged;
  if (ran) {
    const std::string unit = "unit=\"" + c.unit + "\"";
    // Against what the client sent: a continued call saves what its earlier compaction left out.
    const double saved = c.size_received > c.size_out ? static_cast<double>(c.size_received - c.size_out) : 0.0;
    m.add("compactor_serve_size_in_total", unit, static_cast<double>(c.size_received));
    m.add("compactor_serve_size_out_total", unit, static_cast<double>(c.size_out));
    m.add("compactor_serve_size_saved_total", unit, saved);
    m.add("compactor_serve_tenant_size_saved_total", fmt::format("tenant=\"{}\",{}", label_value(tenant), unit), saved);
    m.add("compactor_serve_tenant_saved_tokens_total", fmt::format("tenant=\"{}\"", label_value(tenant)), static_cast<double>(c.saved_tokens));
    m.add("compactor_serve_tenant_saved_usd_total", fmt::format("tenant=\"{}\"", label_value(tenant)), c.saved_usd);
    m.add("compactor_serve_state_total", c.state_hit ? "result=\"hit\"" : "result=\"miss\"");
  }
  record_store(m, c.store);
  if (shared_.ledger != nullptr)
    shared_.ledger->record(tenant, c, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  if (!c.store.unverified && c.store.usage_bytes >= 0)
    m.set("compactor_serve_tenant_store_bytes", fmt::format("tenant=\"{}\"", label_value(tenant)), static_cast<double>(c.store.usage_bytes));
  if (c.peak_rss_kb > 0) m.raise_to("compactor_serve_worker_peak_rss_bytes", "", static_cast<double>(c.peak_rss_kb) * 1024);
  for (std::size_t i = 0; i < c.stage_statuses.size(); ++i) {
    const auto& [stage, status] = c.stage_statuses[i];
    const std::string label = label_value(stage);
    m.add("compactor_serve_stage_outcomes_total", fmt::format("stage=\"{}\",status=\"{}\"", label, status));
    if (status != "skipped" && i < c.stage_us.size())
      m.observe("compactor_serve_stage_seconds", fmt::format("stage=\"{}\"", label), static_cast<double>(c.stage_us[i]) / 1e6);
  }
}

void Exchange::on_compacted(JobRun run) {
  job_.reset();
  compact_us_ = us_since(started_);
  queue_us_ = run.queue_us;
  path_taken_ = run.path;
  why_ = std::move(run.why);
  record(run.outcome, route_.label);
  if (gone_) return;  // the client left while it compacted: nothing goes upstream
  outcome_ = run.outcome;
  const JobOutcome& o = run.outcome;
  Headers extra;
  if (o.result == JobOutcome::passed) spdlog::info("serve: POST {}: tenant={}: passed through: {}", path_, tenant_name(tenant_), o.warning);
  if (o.result == JobOutcome::refused || o.result == JobOutcome::failed || (o.result != JobOutcome::passed && !o.warning.empty())) {
    spdlog::warn("serve: POST {}: tenant={}: {}", path_, tenant_name(tenant_), o.warning);
    // A store that failed is never a reason to refuse: the request goes on without it.
    // The log names the store; the client is not told where it is.
    const std::string shown = d_->redaction(o.warning);
    if (o.result == JobOutcome::failed && d_->settings.serve.reject_on_failure && !o.store_fault) {
      wire::ErrorReply e = route_.shape->error_reply(wire::ProxyError::pipeline_failed, "compactor serve: " + shown);
      session_->reply(Reply{e.status, e.body, "application/json", {{"x-compactor-status", "failed"}}});
      return;
    }
    extra.emplace_back("x-compactor-warning", header_safe(shown));
  }
  add_outcome_headers(o, extra);
  auto body = o.result == JobOutcome::compacted ? std::make_shared<const std::string>(std::move(run.body)) : client_body_;
  forward(std::move(body), std::move(extra));
}

void Exchange::forward(std::shared_ptr<const std::string> body, Headers extra) {
  if (gone_) return;
  auto url = upstream_url(route_.upstream, target_);
  if (!url) {
    wire::ErrorReply e = route_.shape->error_reply(wire::ProxyError::bad_request, "compactor serve: " + url.error().message);
    session_->reply(Reply{e.status, e.body, "application/json", {}});
    return;
  }
  sent_ = body;
  extra_ = std::move(extra);
  hold_.reset();
  status_ = 0;
  upstream_headers_.clear();
  const ServeConfig& s = d_->settings.serve;
  UpstreamCall call{std::move(*url), method_, header_lines_, std::move(body), s.request_timeout_ms, s.upstream_stall_ms};
  forwarding_ = Clock::now();
  session_->set_feeder(weak_from_this());
  transfer_ = pool_.start(call, shared_from_this());
}

void Exchange::on_head(int status, Headers headers) {
  status_ = status;
  if (status / 100 == 2 && outcome_.store.unverified && shared_.vouch) shared_.vouch(tenant_);
  // The summaries this call's compaction asked for start once it is answered: a refused call, or
  // one whose client left, starts no model call.
  if (status / 100 == 2 && !outcome_.background_summaries.empty() && shared_.start_summaries) {
    shared_.start_summaries(d_, tenant_, outcome_.background_summaries);
    outcome_.background_summaries.clear();  // a retried forward starts them once
  }
  upstream_headers_ = std::move(headers);
  hold_.head(status, *this);
}

// From here on the answer is the client's: nothing is retried, so the request's bodies are let go
// (thousands of streams may be held open).
void Exchange::begin_streaming() {
  session_->begin_stream(status_, answer_fields(upstream_headers_, extra_));
  client_body_.reset();
  sent_.reset();
  // Nor is the deployment needed: a reload's old zygote (its plugins loaded) ends with the last
  // request that may still compact, not with the longest stream.
  d_.reset();
}

bool Exchange::on_body(std::string_view bytes) {
  if (gone_) return true;
  if (first_byte_us_ < 0) first_byte_us_ = us_since(forwarding_);
  return hold_.body(bytes, *this);
}

void Exchange::finish(const std::string& error, long new_connections) {
  transfer_.reset();
  error_ = error;
  shared_.metrics.add("compactor_serve_upstream_connections_total", new_connections > 0 ? "kind=\"new\"" : "kind=\"reused\"");
  if (!error.empty() || status_ / 100 != 2)
    shared_.metrics.add("compactor_serve_upstream_errors_total", fmt::format("status=\"{}\"", error.empty() ? status_ : 0));
  if (gone_) return;
  if (hold_.mode() == AnswerHold::Mode::streaming) {
    if (error.empty()) session_->end_stream();
    else session_->abort();  // cut short: closing tells the client the body is incomplete
    log_done();
    return;
  }
  if (error.empty() && !retried_ && hold_.refusal()) {
    // The upstream refused the context: on_prompt_too_long on what the client sent, and one retry.
    retried_ = true;
    compact(true, [self = shared_from_this()](JobRun run) {
      self->guarded("exchange", [&] { self->on_retry_compacted(std::move(run)); });
    });
    return;
  }
  answer_buffered();
}

void Exchange::on_retry_compacted(JobRun run) {
  job_.reset();
  if (gone_) return;
  record(run.outcome, route_.label + "_retry");
  const bool ran = run.outcome.result == JobOutcome::compacted || run.outcome.result == JobOutcome::unchanged;
  auto again = run.outcome.result == JobOutcome::compacted ? std::make_shared<const std::string>(std::move(run.body)) : client_body_;
  // Sending what was just refused again would only be refused again (and is no retry).
  if (!ran || *again == *sent_) {
    answer_buffered();
    return;
  }
  shared_.metrics.add("compactor_serve_retries_total", "");
  spdlog::info("serve: POST {}: tenant={}: the upstream refused the context; on_prompt_too_long ran, retrying once", path_,
               tenant_name(tenant_));
  forward(std::move(again), {{"x-compactor-status", "retried"}});
}

// The whole answer, held: an error, a refusal not retried, a stream that ended before its first
// event was complete, or the proxy's own error when the upstream could not be reached.
void Exchange::answer_buffered() {
  // Nothing of the upstream's answer went to the client yet: a failure is the proxy's own error.
  if (!error_.empty()) {
    spdlog::warn("serve: {} {}: tenant={}: upstream failed: {}", method_, path_, tenant_name(tenant_), error_);
    wire::ErrorReply e = route_.shape->error_reply(wire::ProxyError::upstream_failed, "compactor serve: upstream failed: " + error_);
    session_->reply(Reply{e.status, e.body, "application/json", extra_});
  } else {
    session_->reply(Reply{status_, hold_.take_held(), "", answer_fields(upstream_headers_, extra_)});
  }
  log_done();
}

void Exchange::log_done() {
  const JobOutcome& o = outcome_;
  spdlog::info("serve: {} {} {} {}: tenant={} messages={} continued={} received={} {}→{} parse_us={} state_us={} stages_us={} write_us={} "
               "worker_us={} first_byte_us={} forward_us={} queue_us={} path={}{}{}",
               method_, path_, status_, o.status, tenant_name(tenant_), o.messages, o.covered,
               o.size_received, o.size_in, o.size_out, o.parse_us, o.state_us, o.stages_us, o.write_us, compact_us_, first_byte_us_,
               us_since(forwarding_), queue_us_, path_taken_, why_.empty() ? "" : " why=", why_);
}

}  // namespace

void start_exchange(ProxyShared& shared, std::shared_ptr<const Deployment> deployment, UpstreamPool& pool, Request request,
                    std::shared_ptr<HttpSession> session, ProxyRoute route, std::string tenant) {
  auto x = std::make_shared<Exchange>(shared, std::move(deployment), pool, std::move(request), std::move(session), std::move(route),
                                      std::move(tenant));
  x->start();
}

void describe_exchange_metrics(Metrics& m) {
  m.describe("compactor_serve_requests_total", "counter", "Requests by route and outcome.");
  m.describe("compactor_serve_tenant_requests_total", "counter", "Compacting requests by tenant.");
  m.describe("compactor_serve_size_in_total", "counter", "Size of the conversations received (each client's whole history), in the budget's unit.");
  m.describe("compactor_serve_size_out_total", "counter", "Size of the conversations forwarded, in the budget's unit.");
  m.describe("compactor_serve_size_saved_total", "counter", "Received minus forwarded, in the budget's unit.");
  m.describe("compactor_serve_tenant_size_saved_total", "counter", "Received minus forwarded, by tenant, in the budget's unit.");
  m.describe("compactor_serve_tenant_saved_tokens_total", "counter",
             "What the forwarded bodies saved against the received ones, by tenant, in tokens counted with the config's meter "
             "(chars / 4 without one) whatever the budget's unit.");
  m.describe("compactor_serve_tenant_saved_usd_total", "counter",
             "Those tokens, by tenant, in USD at the model's uncached input price in the price table (0 for a model it does "
             "not price).");
  m.describe("compactor_serve_stage_outcomes_total", "counter", "Stage outcomes by stage and status.");
  m.describe("compactor_serve_stage_seconds", "histogram", "Wall time per stage that ran.");
  m.describe("compactor_serve_queue_seconds", "histogram", "Wait for a pipeline worker (serve.workers), in arrival order.");
  m.describe("compactor_serve_worker_seconds", "histogram", "Wall time of a request's compaction in its worker, as the server sees it.");
  m.describe("compactor_serve_path_seconds", "histogram",
             "Wall time from a pipeline's place to the body to forward, by path: fast (no stage could act on the call: the server "
             "resumed and forwarded it without a worker) or worker.");
  m.describe("compactor_serve_worker_peak_rss_bytes", "gauge", "The largest peak resident memory of a worker so far.");
  m.describe("compactor_serve_upstream_errors_total", "counter", "Upstream answers that were not 2xx, and failures (status 0).");
  m.describe("compactor_serve_upstream_connections_total", "counter", "Upstream calls by connection: new, or a warm one reused.");
  m.describe("compactor_serve_retries_total", "counter", "Requests sent again after a context-length refusal.");
  m.describe("compactor_serve_client_gone_total", "counter",
             "Clients that left before their answer was whole, by what their call was doing: queued (withdrawn), compacting "
             "(its result dropped; the upstream never called) or upstream (the call cancelled).");
  m.describe("compactor_serve_state_total", "counter", "Continuity state lookups: hit or miss.");
  m.describe("compactor_serve_status_total", "counter",
             "Compacting requests by x-compactor-status (compacted only within budget; over_budget, declined, deferred, …).");
  m.describe("compactor_serve_gate_total", "counter", "Compactions the cost gate weighed, by decision.");
  m.describe("compactor_serve_gate_saved_usd_total", "counter",
             "What the weighed compactions save over the calls that follow (USD, the gate's estimate), by decision.");
  m.describe("compactor_serve_gate_broken_usd_total", "counter",
             "What the weighed compactions cost now in prompt cache broken (USD; negative: they cost less), by decision.");
  m.describe("compactor_serve_store_seconds", "histogram", "The store's latency per operation: state_get, state_put, blobs_put.");
  m.describe("compactor_serve_store_errors_total", "counter", "Store operations that failed (the request went on without them).");
  m.describe("compactor_serve_store_full_total", "counter",
             "Writes refused by a bound (the call forwarded as it came, or its state not kept): serve.tenant_max_bytes (tenant) "
             "or serve.unverified_max_bytes (unverified).");
  m.describe("compactor_serve_state_rejected_total", "counter",
             "Stored continuity states that did not verify against store.state_secret_* (planted, or signed by a retired "
             "secret): each a miss.");
  m.describe("compactor_serve_tenant_store_bytes", "gauge", "What each tenant's namespace held after its last write (blobs and state).");
  m.describe("compactor_serve_vouched_total", "counter",
             "API keys' tenants whose storage became their own at an upstream's first 2xx, by result (ok, failed).");
}

}  // namespace compactor::serve
