#include "serve/server.hpp"

#include "serve/client_connection.hpp"
#include "serve/mcp_endpoint.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/upstream_client.hpp"
#include "serve/worker_pool.hpp"
#include "serve/worker_slots.hpp"

#include "host/exit_code.hpp"
#include "host/pipeline_config.hpp"
#include "wire/anthropic_messages.hpp"
#include "wire/gemini.hpp"
#include "wire/wire_format.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

namespace compactor::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Request = http::request<http::string_body>;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

// How long a zygote may take to load the config and its plugins.
constexpr std::chrono::milliseconds kLoadTimeout{120000};

// What a config gives the server: its settings, the upstreams, and the zygote its workers come
// from. A reload makes a new one; a request holds the one it started with.
struct Deployment {
  ServeSettings settings;
  std::string upstream, openai_upstream, gemini_upstream;
  std::shared_ptr<Zygote> zygote;
  std::shared_ptr<McpEndpoint> mcp;  // the archive's MCP server at /mcp

  // Where a wire format's requests go.
  const std::string& upstream_for(const wire::WireFormat& format) const {
    if ((format.name() == "openai_chat" || format.name() == "openai_responses") && !openai_upstream.empty()) return openai_upstream;
    if (format.name() == "gemini") return gemini_upstream;
    return upstream;
  }
  // Where a request no format handles goes: the Gemini API's other paths to its upstream.
  const std::string& upstream_for_path(std::string_view path) const {
    return wire::is_gemini_api_path(path) ? gemini_upstream : upstream;
  }
};

struct LoadOutcome {
  std::shared_ptr<Deployment> deployment;
  std::vector<std::string> errors;
  int exit_code = 0;
};

std::size_t default_workers() { return std::max(1u, std::thread::hardware_concurrency()); }

LoadOutcome load(const ServeOptions& options) {
  LoadOutcome out;
  ServeSettingsLoadResult read = load_serve_settings(options.config_file);
  if (!read.settings) {
    out.errors = std::move(read.errors);
    out.exit_code = kExitBadInput;
    return out;
  }
  auto d = std::make_shared<Deployment>();
  d->settings = std::move(*read.settings);
  ServeConfig& serve = d->settings.serve;
  d->upstream = options.upstream.value_or(serve.upstream);
  d->openai_upstream = options.openai_upstream.value_or(serve.openai_upstream);
  d->gemini_upstream = options.gemini_upstream.value_or(serve.gemini_upstream);
  if (options.listen) serve.listen = *options.listen;
  if (d->upstream.empty()) {
    out.errors.push_back(options.config_file + ": serve.upstream: no upstream: give --upstream URL or serve.upstream");
    out.exit_code = kExitBadInput;
    return out;
  }
  for (std::string* u : {&d->upstream, &d->openai_upstream, &d->gemini_upstream})
    while (!u->empty() && u->back() == '/') u->pop_back();
  // /mcp serves the archive this server writes: its folder as the server resolves it.
  const std::string host = serve.listen.substr(0, serve.listen.rfind(':'));
  std::optional<std::string> token;
  if (!serve.mcp_token_env.empty())
    if (const char* t = std::getenv(serve.mcp_token_env.c_str()); t != nullptr && *t != '\0') token = t;
  std::error_code ec;
  const std::string archive = std::filesystem::absolute(d->settings.archive_dir, ec).lexically_normal().string();
  d->mcp = std::make_shared<McpEndpoint>(archive, options.version, serve.listen, is_loopback_host(host), token);
  if (!is_loopback_host(host) && !token)
    fmt::print(stderr, "compactor serve: /mcp is closed: {} is not a loopback address and serve.mcp_token_env names no token\n",
               serve.listen);
  Zygote::StartFailure failure;
  d->zygote = Zygote::start(options.config_file, kLoadTimeout, failure);
  if (!d->zygote) {
    out.errors = std::move(failure.errors);
    out.exit_code = failure.exit_code;
    return out;
  }
  out.deployment = std::move(d);
  return out;
}

Headers headers_of(const Request& req) {
  Headers h;
  for (const auto& f : req) h.emplace_back(std::string(f.name_string()), std::string(f.value()));
  return h;
}

std::string path_of(const Request& req) {
  std::string target(req.target());
  return target.substr(0, target.find('?'));
}

class Server {
 public:
  Server(ServeOptions options, std::shared_ptr<Deployment> deployment)
      : options_(std::move(options)), current_(std::move(deployment)), slots_(workers_of(*current_)) {
    describe_metrics();
  }

  int listen_and_serve();

 private:
  static std::size_t workers_of(const Deployment& d) {
    return d.settings.serve.workers > 0 ? static_cast<std::size_t>(d.settings.serve.workers) : default_workers();
  }
  void describe_metrics();
  std::shared_ptr<const Deployment> current() {
    std::lock_guard lock(config_mutex_);
    return current_;
  }
  void reload(const char* why);
  void replace_zygote_if_gone();
  void connection(int fd);
  void handle(ClientConnection& client, Request& req);
  void compacting_route(ClientConnection& client, Request& req, const Deployment& d, const wire::WireFormat& format);
  void pass_through(ClientConnection& client, Request& req, const Deployment& d, const std::string& route,
                    const std::string& upstream, const Headers& extra = {});
  JobRun compact(const Deployment& d, const wire::WireFormat& format, const std::string& body, bool prompt_too_long);
  void refuse_upgrade(ClientConnection& client, const wire::WireFormat& api);
  void record(const JobRun& run, const std::string& route);

  ServeOptions options_;
  std::mutex config_mutex_;
  std::shared_ptr<const Deployment> current_;
  std::int64_t config_mtime_ = 0;
  Metrics metrics_;
  WorkerSlots slots_;
  std::atomic<int> in_flight_{0};
  std::atomic<bool> draining_{false};
  int listen_fd_ = -1;
};

void Server::describe_metrics() {
  metrics_.describe("compactor_serve_requests_total", "counter", "Requests by route and outcome.");
  metrics_.describe("compactor_serve_size_in_total", "counter", "Size of the conversations received, in the budget's unit.");
  metrics_.describe("compactor_serve_size_out_total", "counter", "Size of the conversations forwarded, in the budget's unit.");
  metrics_.describe("compactor_serve_size_saved_total", "counter", "Received minus forwarded, in the budget's unit.");
  metrics_.describe("compactor_serve_stage_outcomes_total", "counter", "Stage outcomes by stage and status.");
  metrics_.describe("compactor_serve_stage_seconds", "histogram", "Wall time per stage that ran.");
  metrics_.describe("compactor_serve_queue_seconds", "histogram", "Wait for a free worker slot (serve.workers).");
  metrics_.describe("compactor_serve_worker_seconds", "histogram", "Wall time of a request's compaction in its worker, as the server sees it.");
  metrics_.describe("compactor_serve_worker_peak_rss_bytes", "gauge", "The largest peak resident memory of a worker so far.");
  metrics_.describe("compactor_serve_rejections_total", "counter", "Requests refused by the server's limits.");
  metrics_.describe("compactor_serve_upstream_errors_total", "counter", "Upstream answers that were not 2xx, and failures.");
  metrics_.describe("compactor_serve_retries_total", "counter", "Requests sent again after a context-length refusal.");
  metrics_.describe("compactor_serve_state_total", "counter", "Continuity state lookups: hit or miss.");
  metrics_.describe("compactor_serve_reloads_total", "counter", "Config reloads by result.");
  metrics_.describe("compactor_serve_status_total", "counter",
                    "Compacting requests by x-compactor-status (compacted only within budget; over_budget, declined, deferred, …).");
  metrics_.describe("compactor_serve_gate_total", "counter", "Compactions the cost gate weighed, by decision.");
  metrics_.describe("compactor_serve_gate_saved_usd_total", "counter",
                    "What the weighed compactions save over the calls that follow (USD, the gate's estimate), by decision.");
  metrics_.describe("compactor_serve_gate_broken_usd_total", "counter",
                    "What the weighed compactions cost now in prompt cache broken (USD; negative: they cost less), by decision.");
}

void Server::record(const JobRun& run, const std::string& route) {
  const JobOutcome& c = run.outcome;
  metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"{}\"", route, to_string(c.result)));
  metrics_.add("compactor_serve_status_total", fmt::format("route=\"{}\",status=\"{}\"", route, c.status_header()));
  if (c.gated) {
    const std::string decision = fmt::format("decision=\"{}\"", c.gate_commit ? "committed" : "declined");
    metrics_.add("compactor_serve_gate_total", decision);
    metrics_.add("compactor_serve_gate_saved_usd_total", decision, c.gate_saved_usd);
    metrics_.add("compactor_serve_gate_broken_usd_total", decision, c.gate_broken_usd);
  }
  const bool ran = c.result == JobOutcome::compacted || c.result == JobOutcome::unchanged;
  if (ran) {
    std::string unit = "unit=\"" + c.unit + "\"";
    metrics_.add("compactor_serve_size_in_total", unit, static_cast<double>(c.size_in));
    metrics_.add("compactor_serve_size_out_total", unit, static_cast<double>(c.size_out));
    metrics_.add("compactor_serve_size_saved_total", unit,
                 c.size_in > c.size_out ? static_cast<double>(c.size_in - c.size_out) : 0.0);
    metrics_.add("compactor_serve_state_total", c.state_hit ? "result=\"hit\"" : "result=\"miss\"");
  }
  if (c.peak_rss_kb > 0) metrics_.raise_to("compactor_serve_worker_peak_rss_bytes", "", static_cast<double>(c.peak_rss_kb) * 1024);
  for (std::size_t i = 0; i < c.stage_statuses.size(); ++i) {
    const auto& [stage, status] = c.stage_statuses[i];
    std::string label = label_value(stage);
    metrics_.add("compactor_serve_stage_outcomes_total", fmt::format("stage=\"{}\",status=\"{}\"", label, status));
    if (status != "skipped")
      metrics_.observe("compactor_serve_stage_seconds", fmt::format("stage=\"{}\"", label),
                       static_cast<double>(c.stage_us[i]) / 1e6);
  }
}

JobRun Server::compact(const Deployment& d, const wire::WireFormat& format, const std::string& body, bool prompt_too_long) {
  auto queued = Clock::now();
  WorkerSlot slot(slots_);
  metrics_.observe("compactor_serve_queue_seconds", "", static_cast<double>(us_since(queued)) / 1e6);
  auto started = Clock::now();
  JobRun run = d.zygote->run(Job{std::string(format.name()), prompt_too_long}, body,
                             std::chrono::milliseconds(d.settings.serve.request_timeout_ms));
  metrics_.observe("compactor_serve_worker_seconds", "", static_cast<double>(us_since(started)) / 1e6);
  return run;
}

void Server::compacting_route(ClientConnection& client, Request& req, const Deployment& d, const wire::WireFormat& format) {
  const std::string& body = req.body();
  const std::string path = path_of(req);
  const std::string route(format.route());
  if (auto why = format.passed_through(body)) {
    spdlog::info("serve: POST {}: passed through untouched: {}", path, *why);
    pass_through(client, req, d, route, d.upstream_for(format), {{"x-compactor-status", "passed"}, {"x-compactor-warning", header_safe(*why)}});
    return;
  }
  auto started = Clock::now();
  JobRun c = compact(d, format, body, false);
  const std::int64_t compact_us = us_since(started);
  record(c, route);
  const JobOutcome& o = c.outcome;
  Headers extra;
  if (o.result == JobOutcome::passed) spdlog::info("serve: POST {}: passed through: {}", path, o.warning);
  if (o.result == JobOutcome::refused || o.result == JobOutcome::failed || (o.result != JobOutcome::passed && !o.warning.empty())) {
    spdlog::warn("serve: POST {}: {}", path, o.warning);
    if (o.result == JobOutcome::failed && d.settings.serve.reject_on_failure) {
      wire::ErrorReply e = format.error_reply(wire::ProxyError::pipeline_failed, "compactor serve: " + o.warning);
      respond(client, e.status, e.body, "application/json", {{"x-compactor-status", "failed"}});
      return;
    }
    extra.emplace_back("x-compactor-warning", header_safe(o.warning));
  }
  extra.emplace_back("x-compactor-status", std::string(o.status_header()));
  const std::string& out = o.result == JobOutcome::compacted ? c.body : body;
  const Headers headers = headers_of(req);
  ForwardRequest forward_request{d.upstream_for(format) + std::string(req.target()), "POST", &headers, &out,
                                 d.settings.serve.request_timeout_ms, extra, {}};
  if (format.refuses_in_stream())
    forward_request.refused_in_stream = [&format](std::string_view event) { return format.context_refusal(200, event); };
  auto forwarding = Clock::now();
  UpstreamAnswer u = forward(client, forward_request);
  Headers sent_extra = extra;
  if (format.context_refusal(u.status, u.buffered)) {
    // The upstream refused the context: on_prompt_too_long on what was sent, and one retry; a
    // second refusal goes back as the upstream sent it.
    JobRun r = compact(d, format, body, true);
    record(r, route + "_retry");
    const std::string& again = r.outcome.result == JobOutcome::compacted ? r.body : body;
    // Sending what was just refused again would only be refused again (and is no retry).
    if ((r.outcome.result == JobOutcome::compacted || r.outcome.result == JobOutcome::unchanged) && again != out) {
      metrics_.add("compactor_serve_retries_total", "");
      spdlog::info("serve: POST {}: the upstream refused the context; on_prompt_too_long ran, retrying once", path);
      sent_extra = {{"x-compactor-status", "retried"}};
      ForwardRequest retry{forward_request.url, "POST", &headers, &again, d.settings.serve.request_timeout_ms, sent_extra,
                           forward_request.refused_in_stream};
      u = forward(client, retry);
    }
  }
  if (u.failed() || u.status / 100 != 2)
    metrics_.add("compactor_serve_upstream_errors_total", fmt::format("status=\"{}\"", u.status));
  const std::int64_t forward_us = us_since(forwarding);
  wire::ErrorReply failure = format.error_reply(wire::ProxyError::upstream_failed, "compactor serve: upstream failed: " + u.curl_error);
  finish(client, u, sent_extra, failure.status, failure.body);
  spdlog::info("serve: POST {} {} {}: messages={} continued={} {}→{} parse_us={} state_us={} stages_us={} write_us={} "
               "worker_us={} first_byte_us={} forward_us={}",
               path, u.status, o.status, o.messages, o.covered, o.size_in, o.size_out, o.parse_us, o.state_us, o.stages_us,
               o.write_us, compact_us, u.first_byte_us, forward_us);
}

void Server::pass_through(ClientConnection& client, Request& req, const Deployment& d, const std::string& route,
                          const std::string& upstream, const Headers& extra) {
  metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"passed\"", route));
  const Headers headers = headers_of(req);
  ForwardRequest request{upstream + std::string(req.target()), std::string(req.method_string()), &headers, &req.body(),
                         d.settings.serve.request_timeout_ms, extra, {}};
  UpstreamAnswer u = forward(client, request);
  if (u.failed() || u.status / 100 != 2)
    metrics_.add("compactor_serve_upstream_errors_total", fmt::format("status=\"{}\"", u.status));
  const wire::WireFormat& shape = wire::is_gemini_api_path(path_of(req)) ? wire::gemini() : wire::anthropic_messages();
  wire::ErrorReply failure = shape.error_reply(wire::ProxyError::upstream_failed, "compactor serve: upstream failed: " + u.curl_error);
  finish(client, u, extra, failure.status, failure.body);
}

// A WebSocket upgrade on an API's path: the proxy speaks HTTP only, and says so with 426 Upgrade
// Required, which a client with an HTTP transport (Codex) takes as "fall back now" rather than a
// failure to retry.
void Server::refuse_upgrade(ClientConnection& client, const wire::WireFormat& api) {
  metrics_.add("compactor_serve_requests_total", fmt::format("route=\"{}\",outcome=\"upgrade_refused\"", api.route()));
  client.keep_alive = false;
  respond(client, 426,
          fmt::format(R"({{"error":{{"message":"compactor serve speaks HTTP on {}; WebSocket is not offered: use HTTP","type":"invalid_request_error","param":null,"code":"websocket_not_supported"}}}})",
                      api.route()),
          "application/json", {{"x-compactor-status", "passed"}});
}

void Server::handle(ClientConnection& client, Request& req) {
  const std::string path = path_of(req);
  const std::string method(req.method_string());
  if (req.method() == http::verb::get && path == "/healthz") {
    respond(client, draining_ ? 503 : 200, draining_ ? "draining\n" : "ok\n", "text/plain");
    return;
  }
  if (req.method() == http::verb::get && path == "/metrics") {
    respond(client, 200, metrics_.render(), "text/plain; version=0.0.4");
    return;
  }
  auto d = current();
  if (path == "/mcp") {
    metrics_.add("compactor_serve_requests_total", fmt::format("route=\"mcp\",outcome=\"{}\"", method));
    d->mcp->handle(client, req);
    return;
  }
  const wire::WireFormat* format = wire::wire_format_for(method, path);
  const int limit = static_cast<int>(d->settings.serve.max_concurrency);
  if (in_flight_.fetch_add(1) >= limit) {
    in_flight_.fetch_sub(1);
    metrics_.add("compactor_serve_rejections_total", "reason=\"concurrency\"");
    const wire::WireFormat& shape = format != nullptr ? *format : wire::anthropic_messages();
    wire::ErrorReply e = shape.error_reply(wire::ProxyError::overloaded, "compactor serve: too many requests in flight");
    respond(client, e.status, e.body, "application/json", {{"retry-after", "1"}});
    return;
  }
  try {
    const wire::WireFormat* api = format == nullptr ? wire::wire_format_owning(method, path) : nullptr;
    if (format != nullptr) compacting_route(client, req, *d, *format);
    else if (api != nullptr && beast::iequals(req[http::field::upgrade], "websocket")) refuse_upgrade(client, *api);
    else if (api != nullptr) pass_through(client, req, *d, std::string(api->route()) + "_other", d->upstream_for(*api), {{"x-compactor-status", "passed"}});
    else pass_through(client, req, *d, path == "/v1/messages/count_tokens" ? "count_tokens" : "other", d->upstream_for_path(path));
  } catch (const std::exception& e) {
    spdlog::error("serve: {} {}: internal error: {}", method, path, e.what());
    client.broken = true;
  }
  in_flight_.fetch_sub(1);
}

void Server::connection(int fd) {
  asio::io_context io;
  tcp::socket socket(io);
  beast::error_code ec;
  socket.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  timeval idle{60, 0};  // an idle keep-alive connection is closed after a minute
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
  // Each server-sent event goes out as it arrives, not when the previous one is acknowledged.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  beast::flat_buffer buffer;
  for (;;) {
    auto d = current();
    http::request_parser<http::string_body> parser;
    parser.body_limit(static_cast<std::uint64_t>(d->settings.serve.max_body_bytes));
    http::read(socket, buffer, parser, ec);
    ClientConnection client{socket};
    if (ec == http::error::body_limit) {
      client.keep_alive = false;
      metrics_.add("compactor_serve_rejections_total", "reason=\"body_size\"");
      const auto& head = parser.get();
      const std::string target(head.target());
      const wire::WireFormat* format = wire::wire_format_for(std::string(head.method_string()), target.substr(0, target.find('?')));
      const wire::WireFormat& shape = format != nullptr ? *format : wire::anthropic_messages();
      wire::ErrorReply e = shape.error_reply(
          wire::ProxyError::body_too_large,
          fmt::format("compactor serve: the request body is over serve.max_body_bytes ({})", d->settings.serve.max_body_bytes));
      respond(client, e.status, e.body, "application/json");
      break;
    }
    if (ec) break;
    auto& req = parser.get();
    client.version = req.version();
    client.keep_alive = req.keep_alive() && !draining_;
    handle(client, req);
    if (client.broken || !client.keep_alive || draining_) break;
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

std::int64_t mtime_of(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Runs on the main thread only: the zygote it starts dies with the thread that started it.
void Server::reload(const char* why) {
  LoadOutcome next = load(options_);
  if (!next.deployment) {
    for (const auto& e : next.errors) spdlog::error("serve: reload ({}) refused: {}", why, e);
    metrics_.add("compactor_serve_reloads_total", "result=\"refused\"");
    return;
  }
  if (next.deployment->settings.serve.listen != current()->settings.serve.listen)
    spdlog::warn("serve: reload ({}): serve.listen changed; it takes effect at the next start", why);
  slots_.set_limit(workers_of(*next.deployment));
  {
    std::lock_guard lock(config_mutex_);
    current_ = std::move(next.deployment);
  }
  metrics_.add("compactor_serve_reloads_total", "result=\"ok\"");
  // One lifecycle line, like "listening" and "drained": what tests and operators wait for.
  fmt::print(stderr, "compactor serve: reloaded {} ({}): validated and in use\n", options_.config_file, why);
}

// A zygote that ended (killed from outside, out of memory) is replaced with the same config, so
// the server keeps compacting; until then its requests fail open.
void Server::replace_zygote_if_gone() {
  auto d = current();
  if (d->zygote->alive()) return;
  spdlog::error("serve: the pipeline's zygote (pid {}) ended; starting another", d->zygote->pid());
  Zygote::StartFailure failure;
  auto zygote = Zygote::start(options_.config_file, kLoadTimeout, failure);
  if (!zygote) {
    for (const auto& e : failure.errors) spdlog::error("serve: the pipeline's zygote could not be started again: {}", e);
    return;
  }
  auto next = std::make_shared<Deployment>(*d);
  next->zygote = std::move(zygote);
  std::lock_guard lock(config_mutex_);
  current_ = std::move(next);
}

int Server::listen_and_serve() {
  const std::string listen = current()->settings.serve.listen;
  std::size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  int port = std::atoi(listen.substr(colon + 1).c_str());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (host == "localhost") host = "127.0.0.1";
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    fmt::print(stderr, "compactor serve: listen address \"{}\" is not an IPv4 address and port\n", listen);
    return kExitBadInput;
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 512) != 0) {
    fmt::print(stderr, "compactor serve: cannot listen on {}: {}\n", listen, std::strerror(errno));
    return kExitBadInput;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  config_mtime_ = mtime_of(options_.config_file);

  // Signals are taken by the main thread with sigtimedwait; every other thread has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::thread acceptor([this] {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (draining_) return;
        if (errno == EMFILE || errno == ENFILE) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        return;
      }
      std::thread([this, fd] { connection(fd); }).detach();
    }
  });
  fmt::print("compactor serve: listening on http://{}:{} (upstream {})\n", host, ntohs(addr.sin_port), current()->upstream);
  std::fflush(stdout);

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
  // Graceful drain: no new connections; requests in flight finish (bounded by the request time).
  draining_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor.join();
  ::close(listen_fd_);
  auto deadline = Clock::now() + std::chrono::milliseconds(current()->settings.serve.request_timeout_ms);
  while (in_flight_.load() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int left = in_flight_.load();
  fmt::print(stderr, "compactor serve: drained{}; exiting\n", left > 0 ? fmt::format(" ({} requests cut at the time limit)", left) : "");
  std::fflush(nullptr);
  spdlog::shutdown();
  // Idle keep-alive connections' threads may still block in a read: end without unwinding them.
  ::_exit(left > 0 ? kExitNotDone : kExitOk);
}

}  // namespace

int run_server(const ServeOptions& options) {
  // Before any thread: children reaped by the kernel, libcurl's global state, SIGPIPE ignored.
  reap_children_automatically();
  ::signal(SIGPIPE, SIG_IGN);
  init_upstream_client();
  LoadOutcome loaded = load(options);
  if (!loaded.deployment) {
    for (const auto& e : loaded.errors) fmt::print(stderr, "{}\n", e);
    return loaded.exit_code;
  }
  Server server(options, loaded.deployment);
  return server.listen_and_serve();
}

}  // namespace compactor::serve
