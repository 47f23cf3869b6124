#include "serve/server.hpp"

#include "serve/dashboard_page.hpp"
#include "serve/deployment.hpp"
#include "serve/http_session.hpp"
#include "serve/pipeline_queue.hpp"
#include "serve/proxy_exchange.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/summary_pool.hpp"
#include "serve/tenant.hpp"
#include "serve/upstream_pool.hpp"
#include "serve/upstream_url.hpp"

#include "compactor/build_fingerprint.hpp"
#include "host/exit_code.hpp"
#include "store/store.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/string.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <set>
#include <thread>

namespace compactor::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Distinct tenants named in metrics; past this, the rest are counted as "other" (a key-hash
// tenant per API key must not grow the metrics without bound).
constexpr std::size_t kTenantLabels = 1000;
// /mcp requests read and not yet answered, at most: its two threads read archives, which may
// block (a slow store); past this a caller is told to come back (503 with Retry-After) rather
// than its body kept waiting (each up to 1 MiB).
constexpr int kMcpInFlight = 64;

std::int64_t mtime_of(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The file descriptors this process may open, raised to the hard limit: a held stream costs two
// (the client's connection and the upstream's).
std::uint64_t raise_descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur == RLIM_INFINITY ? 1u << 20 : static_cast<std::uint64_t>(r.rlim_cur);
}

void block_signals_in_this_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

// One I/O thread: its event loop, and its own pool of upstream connections.
struct IoThread {
  explicit IoThread(const UpstreamSettings& settings) : pool(context, settings) {}
  asio::io_context context{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{context.get_executor()};
  UpstreamPool pool;
  std::thread thread;
};

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

class Server final : public RequestHandler {
 public:
  Server(ServeOptions options, std::shared_ptr<Deployment> deployment);
  ~Server() override;

  int listen_and_serve();

  std::optional<Reply> screen(const RequestHead& head, std::uint64_t content_length, HttpSession& session) override;
  void handle(Request request, std::shared_ptr<HttpSession> session) override;
  std::optional<Reply> admit(const RequestHead& head, std::uint64_t content_length, HttpSession& session);
  void route(Request request, std::shared_ptr<HttpSession> session);
  void connection_closed() override;

 private:
  std::shared_ptr<const Deployment> current() {
    std::lock_guard lock(config_mutex_);
    return current_;
  }
  void describe_metrics();
  // A failure caught where it happened (a handler's exception): counted by where, logged.
  void contain(std::string_view where, std::string_view what);
  void zero_tenant_metrics(const Deployment& d);
  // The config in use, by hash and generation, in /metrics.
  void show_config(const Deployment& d);
  // /healthz's body: ok (or draining), the config in use and the build.
  std::string health(const Deployment& d) const;
  Reply dashboard(const Deployment& d) const;
  std::string tenant_label(const std::string& tenant);
  void vouch(const std::string& tenant);
  void await_vouch(const std::string& tenant);
  // `say_refusal` false: a refusal already said (a retry every second) is neither logged nor counted.
  void reload(const char* why, bool say_refusal = true);
  void replace_zygote_if_gone();
  void accept();
  void on_accepted(IoThread& thread, tcp::socket socket);
  SessionLimits limits();
  Reply error_reply(const wire::WireFormat* format, wire::ProxyError kind, const std::string& message) const;
  std::optional<Reply> admit_mcp(const RequestHead& head, std::uint64_t content_length, HttpSession& session, const Deployment& d);
  std::optional<Reply> mcp_busy();
  void handle_mcp(Request request, std::shared_ptr<HttpSession> session, std::shared_ptr<const Deployment> d);
  UpstreamPool& pool_of(HttpSession& session);
  int drain();

  ServeOptions options_;
  std::mutex config_mutex_;
  std::shared_ptr<const Deployment> current_;
  std::int64_t config_mtime_ = 0;
  std::string config_text_;  // the config as last loaded, for the reload line's list of what changed
  Metrics metrics_;
  std::atomic<int> in_flight_{0}, mcp_in_flight_{0};
  std::atomic<std::uint64_t> connections_{0};
  std::uint64_t max_connections_ = 0;
  std::atomic<bool> draining_{false}, accept_paused_{false};
  bool zygote_gone_said_ = false;  // main thread only
  std::vector<std::unique_ptr<IoThread>> io_;
  std::size_t next_io_ = 0;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::steady_timer> accept_retry_;
  PipelineQueue queue_;
  asio::thread_pool mcp_pool_{2};
  asio::thread_pool vouch_pool_{1};  // store writes that may block: off the I/O threads
  std::mutex vouch_mutex_;
  struct Vouching {
    std::uint64_t id;
    std::shared_future<void> done;
  };
  std::map<std::string, Vouching> vouching_;  // vouches under way, by tenant
  std::uint64_t vouches_ = 0;
  ProxyShared shared_;
  std::mutex tenants_mutex_;
  std::set<std::string> tenant_labels_;
  OperatorLedger ledger_;
  SummaryPool summaries_{metrics_, [this](const std::string& t) { await_vouch(t); }};  // first to stop
};

Server::Server(ServeOptions options, std::shared_ptr<Deployment> deployment)
    : options_(std::move(options)),
      current_(std::move(deployment)),
      queue_(current_->workers(), static_cast<std::size_t>(current_->settings.serve.max_queued)),
      shared_{metrics_, queue_, in_flight_, [this](const std::string& t) { return tenant_label(t); },
              [this](std::string_view where, std::string_view what) { contain(where, what); },
              [this](const std::string& t) { vouch(t); }, [this](const std::string& t) { await_vouch(t); },
              [this](std::shared_ptr<const Deployment> d, const std::string& tenant, const std::vector<std::string>& keys) {
                for (const auto& key : keys) summaries_.submit(SummaryPool::Task{d, tenant, key});
              }} {
  shared_.ledger = &ledger_;
  describe_metrics();
  zero_tenant_metrics(*current_);
  show_config(*current_);
}

Server::~Server() {
  for (auto& t : io_) t->context.stop();
  for (auto& t : io_)
    if (t->thread.joinable()) t->thread.join();
  io_.clear();  // the sessions it holds hold places in queue_, which must outlive them
}

void Server::describe_metrics() {
  describe_exchange_metrics(metrics_);
  SummaryPool::describe(metrics_);
  metrics_.describe("compactor_serve_rejections_total", "counter", "Requests refused by the server's limits, by reason.");
  metrics_.describe("compactor_serve_reloads_total", "counter", "Config reloads by result.");
  metrics_.describe("compactor_serve_open_connections", "gauge", "Client connections open now.");
  metrics_.describe("compactor_serve_in_flight", "gauge", "Requests not yet answered (held streams included).");
  metrics_.describe("compactor_serve_pipelines_waiting", "gauge", "Requests waiting for a pipeline worker.");
  metrics_.describe("compactor_serve_mcp_requests_total", "counter", "/mcp requests by HTTP status.");
  metrics_.describe("compactor_serve_internal_errors_total", "counter",
                    "Failures inside serve caught where they happened (the one request failed, 502 or cut short), by where.");
  for (const char* op : {"state_get", "state_put", "blobs_put"})
    metrics_.add("compactor_serve_store_errors_total", fmt::format("op=\"{}\"", op), 0);
  for (const char* result : {"ok", "refused"}) metrics_.add("compactor_serve_reloads_total", fmt::format("result=\"{}\"", result), 0);
  metrics_.describe("compactor_serve_config_info", "gauge",
                    "The config in use (always 1): the first 12 hex digits of the SHA-256 of the config as resolved (what "
                    "compactor print-pipeline prints) and its generation (1 at start, one more per accepted reload).");
  metrics_.describe("compactor_build_info", "gauge", "The running build: its version, plugin API and build fingerprint (always 1).");
  metrics_.set("compactor_build_info",
               fmt::format("version=\"{}\",api=\"{}\",fingerprint=\"{}\"", label_value(options_.version), kApiVersion,
                           label_value(kBuildFingerprint)),
               1);
}

void Server::contain(std::string_view where, std::string_view what) {
  metrics_.add("compactor_serve_internal_errors_total", fmt::format("where=\"{}\"", where));
  spdlog::error("serve: {}: {}", where, what);
}

// Every configured client is in the metrics from the start, at zero.
void Server::zero_tenant_metrics(const Deployment& d) {
  for (const auto& c : d.settings.serve.clients) {
    const std::string t = "tenant=\"" + label_value(tenant_label(c.name)) + "\"";
    metrics_.add("compactor_serve_tenant_requests_total", t, 0);
    metrics_.add("compactor_serve_tenant_size_saved_total", t + ",unit=\"" + d.zygote->unit() + "\"", 0);
    metrics_.add("compactor_serve_tenant_saved_tokens_total", t, 0);
    metrics_.add("compactor_serve_tenant_saved_usd_total", t, 0);
    ledger_.know(tenant_label(c.name));
  }
}

void Server::show_config(const Deployment& d) {
  metrics_.set_only("compactor_serve_config_info",
                    fmt::format("hash=\"{}\",generation=\"{}\"", label_value(d.zygote->config_hash()), d.generation), 1);
}

std::string Server::health(const Deployment& d) const {
  return fmt::format("{}\nconfig: {} generation {}\nbuild: {} fingerprint {}\n", draining_ ? "draining" : "ok", d.zygote->config_hash(),
                     d.generation, options_.version, kBuildFingerprint);
}

Reply Server::dashboard(const Deployment& d) const {
  DashboardView v{ledger_.snapshot(), options_.config_file, d.zygote->config_hash(), d.generation, options_.version, kBuildFingerprint,
                  d.settings.store.kind == StoreConfig::Kind::redis ? "redis" : "folder",
                  std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count()};
  return dashboard_reply(v);
}

std::string Server::tenant_label(const std::string& tenant) {
  if (tenant.empty()) return std::string(tenant_name(tenant));
  std::lock_guard lock(tenants_mutex_);
  if (tenant_labels_.count(tenant) != 0) return tenant;
  if (tenant_labels_.size() >= kTenantLabels) return "other";
  tenant_labels_.insert(tenant);
  return tenant;
}

// An unverified tenant's first 2xx: its storage becomes its own, off the I/O threads (a store
// call may wait up to its time limit), while the answer streams. Its next call's pipeline waits
// for it (await_vouch). Lost at exit, it is done again at the tenant's next 2xx.
void Server::vouch(const std::string& tenant) {
  auto task = std::make_shared<std::packaged_task<void()>>([this, tenant, d = current()] {
    try {
      auto done = store::vouch_for(d->settings.store, d->settings.archive_dir, tenant);
      metrics_.add("compactor_serve_vouched_total", done ? "result=\"ok\"" : "result=\"failed\"");
      if (done) spdlog::info("serve: tenant={}: the upstream answered its first call with a 2xx: what it stored is its own", tenant);
      else spdlog::warn("serve: tenant={}: could not keep what it stored (retried at its next call): {}", tenant, done.error().message);
    } catch (const std::exception& e) {
      contain("vouch", fmt::format("tenant={}: {}", tenant, e.what()));
    }
  });
  std::uint64_t id = 0;
  {
    std::lock_guard lock(vouch_mutex_);
    id = ++vouches_;
    vouching_[tenant] = Vouching{id, task->get_future().share()};
  }
  asio::post(vouch_pool_, [this, task, tenant, id] {
    (*task)();
    std::lock_guard lock(vouch_mutex_);
    if (auto it = vouching_.find(tenant); it != vouching_.end() && it->second.id == id) vouching_.erase(it);  // only its own
  });
}

void Server::await_vouch(const std::string& tenant) {
  std::shared_future<void> pending;
  {
    std::lock_guard lock(vouch_mutex_);
    auto it = vouching_.find(tenant);
    if (it == vouching_.end()) return;
    pending = it->second.done;
  }
  pending.wait();
}

SessionLimits Server::limits() {
  auto d = current();  // under the lock: a reload replaces current_ from the main thread
  const ServeConfig& s = d->settings.serve;
  return SessionLimits{std::chrono::milliseconds(s.header_timeout_ms), std::chrono::milliseconds(s.body_timeout_ms),
                       std::chrono::milliseconds(s.upstream_stall_ms), static_cast<std::uint64_t>(s.max_body_bytes)};
}

Reply Server::error_reply(const wire::WireFormat* format, wire::ProxyError kind, const std::string& message) const {
  const wire::WireFormat& shape = format != nullptr ? *format : *wire::wire_formats().front();
  wire::ErrorReply e = shape.error_reply(kind, message);
  return Reply{e.status, e.body, "application/json", {}};
}

// A request's failure inside serve is its own: 500 or 502 in the API's shape, counted and logged.
std::optional<Reply> Server::screen(const RequestHead& head, std::uint64_t content_length, HttpSession& session) {
  try {
    return admit(head, content_length, session);
  } catch (const std::exception& e) {
    contain("request_head", fmt::format("{} {}: {}", std::string(head.method_string()), path_of(std::string_view(head.target().data(), head.target().size())), e.what()));
    return error_reply(nullptr, wire::ProxyError::pipeline_failed, "compactor serve: the request failed inside serve");
  }
}

void Server::handle(Request request, std::shared_ptr<HttpSession> session) {
  const std::string what = fmt::format("{} {}", std::string(request.method_string()),
                                      path_of(std::string_view(request.target().data(), request.target().size())));
  try {
    route(std::move(request), session);
  } catch (const std::exception& e) {
    contain("request", fmt::format("{}: {}", what, e.what()));
    if (!session->answer_begun()) {
      session->close_after_answer();
      session->reply(error_reply(nullptr, wire::ProxyError::upstream_failed, "compactor serve: the request failed inside serve"));
    } else {
      session->abort();
    }
  }
}

// Before the body is read: what can be refused from the head alone is, so that a large body is
// never read only to be refused.
std::optional<Reply> Server::admit(const RequestHead& head, std::uint64_t content_length, HttpSession& session) {
  auto d = current();
  const std::string_view target(head.target().data(), head.target().size());
  const std::string method(head.method_string());
  const std::string_view path = path_of(target);
  const wire::WireFormat* format = wire::wire_format_for(method, path);
  const wire::WireFormat* api = format != nullptr ? format : wire::wire_format_owning(method, path);
  if (auto why = target_refusal(target)) {
    metrics_.add("compactor_serve_rejections_total", "reason=\"target\"");
    return error_reply(api, wire::ProxyError::bad_request, "compactor serve: " + *why);
  }
  if (content_length > static_cast<std::uint64_t>(d->settings.serve.max_body_bytes)) {
    metrics_.add("compactor_serve_rejections_total", "reason=\"body_size\"");
    return error_reply(api, wire::ProxyError::body_too_large,
                       fmt::format("compactor serve: the request body is over serve.max_body_bytes ({})", d->settings.serve.max_body_bytes));
  }
  if (path == "/mcp") return admit_mcp(head, content_length, session, *d);
  if (path == "/healthz" || path == "/metrics" || path == "/dashboard") return std::nullopt;
  if (!d->settings.serve.clients.empty())
    if (auto who = identify_tenant(d->settings.serve.clients, head, target, false); !who) {
      metrics_.add("compactor_serve_rejections_total", "reason=\"unauthorized\"");
      spdlog::info("serve: {} {}: refused 401: {}", method, path, who.error().message);
      return error_reply(api, wire::ProxyError::unauthorized, who.error().message);
    }
  if (format == nullptr) return std::nullopt;
  // Taken now, atomically: heads that arrive together cannot all pass serve.max_queued.
  auto place = queue_.reserve();
  if (!place) {
    metrics_.add("compactor_serve_rejections_total", "reason=\"queue_full\"");
    Reply r = error_reply(format, wire::ProxyError::overloaded,
                          "compactor serve: serve.max_queued requests already wait for a pipeline; try again shortly");
    r.headers.emplace_back("retry-after", "1");
    return r;
  }
  session.hold(std::move(place));
  return std::nullopt;
}

UpstreamPool& Server::pool_of(HttpSession& session) {
  for (auto& t : io_)
    if (&t->context == &session.context()) return t->pool;
  return io_.front()->pool;  // not reached: every session runs on one of the I/O threads
}

void Server::route(Request request, std::shared_ptr<HttpSession> session) {
  if (draining_) session->drain();
  const std::string target(request.target());
  const std::string method(request.method_string());
  const std::string path(path_of(target));
  auto d = current();
  if (request.method() == http::verb::get && path == "/healthz") {
    session->reply(Reply{draining_ ? 503 : 200, health(*d), "text/plain", {}});
    return;
  }
  if (request.method() == http::verb::get && (path == "/metrics" || path == "/dashboard")) {
    if (auto refusal = scrape_refusal(d->settings.serve, d->listen.loopback(), request.base(), path)) {
      metrics_.add("compactor_serve_rejections_total", "reason=\"unauthorized\"");
      session->reply(*refusal);
      return;
    }
    if (path == "/dashboard") {
      session->reply(dashboard(*d));
      return;
    }
    metrics_.set("compactor_serve_open_connections", "", static_cast<double>(connections_.load()));
    metrics_.set("compactor_serve_in_flight", "", static_cast<double>(in_flight_.load()));
    metrics_.set("compactor_serve_pipelines_waiting", "", static_cast<double>(queue_.waiting()));
    session->reply(Reply{200, metrics_.render(), "text/plain; version=0.0.4", {}});
    return;
  }
  if (path == "/mcp") {
    handle_mcp(std::move(request), std::move(session), std::move(d));
    return;
  }
  const wire::WireFormat* format = wire::wire_format_for(method, path);
  const wire::WireFormat* api = format != nullptr ? format : wire::wire_format_owning(method, path);
  auto tenant = identify_tenant(d->settings.serve.clients, request.base(), target, false);
  if (!tenant) {  // screened before the body; a reload may have added clients since
    session->reply(error_reply(api, wire::ProxyError::unauthorized, tenant.error().message));
    return;
  }
  ProxyRoute route;
  route.compacting = format;
  route.shape = api != nullptr ? api : wire::wire_formats().front();
  route.upstream = d->upstream_for(*route.shape);
  route.place = std::static_pointer_cast<PipelineQueue::Place>(session->take_reservation());
  if (format != nullptr) {
    route.label = std::string(format->route());
  } else if (api != nullptr && beast::iequals(request[http::field::upgrade], "websocket")) {
    // The proxy speaks HTTP only; 426 tells a client with an HTTP transport (Codex) to fall back now.
    metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"upgrade_refused\"", api->route()));
    Reply r = error_reply(api, wire::ProxyError::websocket_refused,
                          fmt::format("compactor serve speaks HTTP on {}; WebSocket is not offered: use HTTP", path));
    r.headers.emplace_back("x-compactor-status", "passed");
    session->close_after_answer();
    session->reply(r);
    return;
  } else {
    route.label = api != nullptr ? std::string(api->route()) + "_other" : "other";
    route.extra = {{"x-compactor-status", "passed"}};
    metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"passed\"", route.label));
  }
  start_exchange(shared_, std::move(d), pool_of(*session), std::move(request), session, std::move(route), std::move(*tenant));
}

// /mcp is authenticated and its 1 MiB limit applied from the head: no stranger's body is read,
// and a chunked one stops at the limit.
std::optional<Reply> Server::admit_mcp(const RequestHead& head, std::uint64_t content_length, HttpSession& session, const Deployment& d) {
  if (auto refusal = d.mcp->screen(head, content_length)) {
    if (refusal->status == 413) metrics_.add("compactor_serve_rejections_total", "reason=\"body_size\"");
    metrics_.add("compactor_serve_mcp_requests_total", fmt::format("status=\"{}\"", refusal->status));
    return refusal;
  }
  session.limit_body(McpEndpoint::kMaxBodyBytes);
  if (mcp_in_flight_.load() >= kMcpInFlight) return mcp_busy();
  return std::nullopt;
}

std::optional<Reply> Server::mcp_busy() {
  metrics_.add("compactor_serve_rejections_total", "reason=\"mcp_busy\"");
  metrics_.add("compactor_serve_mcp_requests_total", "status=\"503\"");
  return Reply{503, R"({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"compactor serve: /mcp is busy; try again shortly"}})",
               "application/json", {{"retry-after", "1"}}};
}

// /mcp reads the archive, which may block: it runs on a small pool of its own, and the answer
// comes back to the connection's thread. It counts in flight like any request (the drain waits);
// the bound is taken here, once the body is read, so that heads arriving together cannot pass it.
void Server::handle_mcp(Request request, std::shared_ptr<HttpSession> session, std::shared_ptr<const Deployment> d) {
  if (mcp_in_flight_.fetch_add(1) >= kMcpInFlight) {
    mcp_in_flight_.fetch_sub(1);
    session->reply(*mcp_busy());
    return;
  }
  in_flight_.fetch_add(1);
  asio::post(mcp_pool_, [this, request = std::move(request), session = std::move(session), d = std::move(d)] {
    std::string tenant = "none";  // refused before the caller was known
    Reply r;
    try {
      r = d->mcp->handle(request, &tenant);
    } catch (const std::exception& e) {
      contain("mcp", fmt::format("{} /mcp: tenant={}: {}", request.method_string(), tenant, e.what()));
      r = Reply{500, R"({"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"compactor serve: the request failed inside serve"}})",
                "application/json", {}};
    }
    metrics_.add("compactor_serve_mcp_requests_total", fmt::format("status=\"{}\"", r.status));
    spdlog::info("serve: {} /mcp {}: tenant={}", request.method_string(), r.status, tenant);
    asio::post(session->executor(), [this, session, r = std::move(r)] {
      session->reply(r);
      mcp_in_flight_.fetch_sub(1);
      in_flight_.fetch_sub(1);
    });
  });
}

void Server::connection_closed() {
  const std::uint64_t open = connections_.fetch_sub(1) - 1;
  if (accept_paused_ && open < max_connections_ && !io_.empty())
    asio::post(io_.front()->context, [this] {
      if (accept_paused_.exchange(false)) accept();
    });
}

// Accepts on the first I/O thread and hands each connection to the next thread in turn. At
// max_connections it stops accepting (the kernel's backlog holds the next ones) until one closes.
void Server::accept() {
  if (draining_ || !acceptor_) return;
  if (connections_.load() >= max_connections_) {
    accept_paused_ = true;
    // A connection that closed between the count and the flag saw no flag and woke nobody: look
    // again, and go on if it did (whoever clears the flag accepts).
    if (connections_.load() >= max_connections_ || !accept_paused_.exchange(false)) return;
  }
  IoThread& t = *io_[next_io_++ % io_.size()];
  acceptor_->async_accept(t.context, [this, &t](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || draining_) return;
    if (ec) {
      // Out of descriptors, say: wait a little rather than spin.
      spdlog::warn("serve: accept failed: {}", ec.message());
      accept_retry_->expires_after(std::chrono::milliseconds(50));
      accept_retry_->async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    on_accepted(t, std::move(socket));
    accept();
  });
}

void Server::on_accepted(IoThread& t, tcp::socket socket) {
  connections_.fetch_add(1);
  beast::error_code ignored;
  // Each server-sent event goes out as it arrives, not when the previous one is acknowledged.
  socket.set_option(tcp::no_delay(true), ignored);
  auto d = current();
  auto session = std::make_shared<HttpSession>(
      std::move(socket), *this, limits(), [this](const RequestHead& head, std::string_view) {
        metrics_.add("compactor_serve_rejections_total", "reason=\"body_size\"");
        const std::string target(head.target());
        if (path_of(target) == "/mcp") return McpEndpoint::too_large();
        const wire::WireFormat* format = wire::wire_format_for(std::string(head.method_string()), path_of(target));
        return error_reply(format, wire::ProxyError::body_too_large,
                           fmt::format("compactor serve: the request body is over serve.max_body_bytes ({})",
                                       current()->settings.serve.max_body_bytes));
      });
  asio::post(t.context, [session] { session->start(); });
}

namespace {

// Whether two configs archive to the same place: the folder, or the same Redis keys.
bool same_archive(const ServeSettings& a, const ServeSettings& b) {
  const StoreConfig &x = a.store, &y = b.store;
  if (x.kind != y.kind) return false;
  if (x.kind == StoreConfig::Kind::folder) return a.archive_dir == b.archive_dir;
  return x.url == y.url && x.prefix == y.prefix;
}

std::string text_of(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

// What a reload changed, for its line: the settings by name, never their values.
std::string what_changed(const std::string& before, const std::string& after) {
  const std::vector<std::string> changed = changed_settings(before, after);
  if (changed.empty()) return "nothing changed";
  std::string out = "changed: ";
  for (std::size_t i = 0; i < changed.size(); ++i) out += (i > 0 ? ", " : "") + changed[i];
  return out;
}

}  // namespace

// Runs on the main thread only: the zygote it starts dies with the thread that started it.
void Server::reload(const char* why, bool say_refusal) {
  std::string text = text_of(options_.config_file);
  LoadOutcome next = load_deployment(options_);
  if (!next.deployment) {
    if (!say_refusal) return;
    for (const auto& e : next.errors) spdlog::error("serve: reload ({}) refused: {}", why, e);
    metrics_.add("compactor_serve_reloads_total", "result=\"refused\"");
    return;
  }
  for (const auto& w : next.deployment->settings.warnings) spdlog::warn("serve: {}", w);
  auto d = current();
  if (next.deployment->settings.serve.listen != d->settings.serve.listen)
    spdlog::warn("serve: reload ({}): serve.listen changed; it takes effect at the next start", why);
  // Receipts already sent to agents name blobs where the old config archived them.
  if (!same_archive(d->settings, next.deployment->settings))
    spdlog::warn("serve: reload ({}): the archive moved (archive.dir or store): receipts sent before now restore only from the old one "
                 "(compactor restore --archive, or a config that names it), not through this server's /mcp", why);
  next.deployment->mcp->bind_port(acceptor_->local_endpoint().port());
  next.deployment->mcp->adopt_sessions(*d->mcp);
  queue_.set_limits(next.deployment->workers(), static_cast<std::size_t>(next.deployment->settings.serve.max_queued));
  zero_tenant_metrics(*next.deployment);
  next.deployment->generation = d->generation + 1;
  {
    std::lock_guard lock(config_mutex_);
    current_ = std::move(next.deployment);
  }
  show_config(*current());
  metrics_.add("compactor_serve_reloads_total", "result=\"ok\"");
  // One lifecycle line, like "listening" and "drained": what tests and operators wait for.
  fmt::print(stderr, "compactor serve: reloaded {} ({}): validated and in use; {}\n", options_.config_file, why,
             what_changed(config_text_, text));
  config_text_ = std::move(text);
}

// A zygote that ended (killed from outside, out of memory) is replaced by reloading the config
// file, so that a deployment's settings and its pipeline always come from one config: started
// alone from the file, the new zygote would run whatever the file now says (a config a reload
// refused, say) beside the old settings. Until a reload succeeds its requests fail open.
void Server::replace_zygote_if_gone() {
  auto d = current();
  if (d->zygote->alive()) {
    zygote_gone_said_ = false;
    return;
  }
  const bool first = !zygote_gone_said_;
  if (first)
    spdlog::error("serve: the pipeline's zygote (pid {}) ended; reloading {} to replace it (requests are forwarded uncompacted "
                  "until it loads)", d->zygote->pid(), options_.config_file);
  zygote_gone_said_ = true;
  reload("the pipeline's zygote ended", first);
}

int Server::listen_and_serve() {
  auto d = current();
  const ServeConfig& s = d->settings.serve;
  const std::uint64_t descriptors = raise_descriptor_limit();
  max_connections_ = s.max_connections > 0 ? static_cast<std::uint64_t>(s.max_connections) : std::max<std::uint64_t>(16, (descriptors - 64) / 2);
  const std::size_t threads = s.io_threads > 0 ? static_cast<std::size_t>(s.io_threads) : 2;
  const UpstreamSettings upstream{s.ca_file, [this](std::string_view where, std::string_view what) { contain(where, what); }};
  for (std::size_t i = 0; i < threads; ++i) io_.push_back(std::make_unique<IoThread>(upstream));

  beast::error_code ec;
  const tcp::endpoint endpoint = d->listen.endpoint();
  acceptor_.emplace(io_.front()->context);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && endpoint.address().is_v6()) acceptor_->set_option(asio::ip::v6_only(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(4096, ec);
  if (ec) {
    fmt::print(stderr, "compactor serve: cannot listen on {}: {}\n", s.listen, ec.message());
    return kExitBadInput;
  }
  const unsigned short port = acceptor_->local_endpoint().port();
  d->mcp->bind_port(port);
  accept_retry_.emplace(io_.front()->context);
  config_mtime_ = mtime_of(options_.config_file);
  config_text_ = text_of(options_.config_file);

  // Signals are taken by the main thread with sigtimedwait; every other thread has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  for (auto& t : io_)
    t->thread = std::thread([this, &context = t->context] {
      block_signals_in_this_thread();
      // The last stop: a handler's exception that nothing nearer caught ends that handler, not
      // the loop every other connection runs on (Asio lets run() go on after one).
      for (;;) {
        try {
          context.run();
          return;
        } catch (const std::exception& e) {
          contain("io_loop", e.what());
        } catch (...) {
          contain("io_loop", "an exception that is no std::exception");
        }
      }
    });
  asio::post(io_.front()->context, [this] { accept(); });

  for (const auto& w : d->settings.warnings) spdlog::warn("serve: {}", w);
  if (auto why = d->mcp->closed_reason()) fmt::print(stderr, "compactor serve: {}\n", *why);
  const std::string shown = d->listen.host.find(':') != std::string::npos ? "[" + d->listen.host + "]" : d->listen.host;
  fmt::print("compactor serve: listening on http://{}:{} (upstream {})\n", shown, port, d->upstream_for(*wire::wire_formats().front()));
  std::fflush(stdout);
  // Let go of the first deployment: held here, its zygote would outlive every reload.
  d.reset();

  for (;;) {
    timespec wait{1, 0};
    int sig = ::sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGHUP) {
      reload("SIGHUP");
      config_mtime_ = mtime_of(options_.config_file);
    } else if (sig == SIGTERM || sig == SIGINT) {
      break;
    } else if (std::int64_t m = mtime_of(options_.config_file); m != 0 && m != config_mtime_) {
      config_mtime_ = m;
      reload("the file changed");
    }
    replace_zygote_if_gone();
  }
  return drain();
}

// Graceful drain: no new connections; requests in flight (streams and /mcp included) finish,
// bounded by the request time; idle connections are closed when the loops stop.
int Server::drain() {
  draining_ = true;
  asio::post(io_.front()->context, [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
  });
  auto deadline = Clock::now() + std::chrono::milliseconds(current()->settings.serve.request_timeout_ms);
  while (in_flight_.load() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int left = in_flight_.load();
  fmt::print(stderr, "compactor serve: drained{}; exiting\n", left > 0 ? fmt::format(" ({} requests cut at the time limit)", left) : "");
  std::fflush(nullptr);
  spdlog::shutdown();
  // Requests cut at the limit still hold their threads' state: end without unwinding them.
  ::_exit(left > 0 ? kExitNotDone : kExitOk);
}

}  // namespace

int run_server(const ServeOptions& options) {
  // Before any thread: children reaped by the kernel, libcurl's global state, SIGPIPE ignored,
  // and the signals the main thread waits for blocked (every thread made later inherits that).
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  reap_children_automatically();
  ::signal(SIGPIPE, SIG_IGN);
  UpstreamPool::global_init();
  LoadOutcome loaded = load_deployment(options);
  if (!loaded.deployment) {
    for (const auto& e : loaded.errors) fmt::print(stderr, "{}\n", e);
    return loaded.exit_code;
  }
  Server server(options, std::move(loaded.deployment));  // the server alone holds it: a reload ends its zygote
  return server.listen_and_serve();
}

}  // namespace compactor::serve
