// The server's upstream connections: one libcurl multi handle per I/O thread, driven by that
// thread's Asio event loop (curl's multi_socket interface), so thousands of streamed calls share
// a few threads, and each upstream host's connections stay open between calls (keep-alive, TLS
// sessions resumed) instead of a new TCP and TLS handshake per model call. This is Envoy's
// model: every worker thread has its own loop and its own connection pools; the threads share
// only the DNS cache and TLS session tickets (a curl share).
//
// Why libcurl rather than Beast's own client: libcurl is already how serve reaches the upstream,
// and it brings what a team's network needs and Beast leaves to us: proxies (HTTPS_PROXY),
// certificate checks against the system's store, TLS session resumption, and a per-host
// connection cache with idle limits.
#pragma once

#include "serve/reply.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace compactor::serve {

// What one call to the upstream hears, on its I/O thread. Callbacks never re-enter the pool.
class UpstreamListener {
 public:
  virtual ~UpstreamListener() = default;
  // The final response's status and headers (after any 1xx).
  virtual void on_head(int status, Headers headers) = 0;
  // Body bytes as they arrive. `accepted` false asks the pool to pause the call and hand the same
  // bytes again after resume() (the client is not reading fast enough); then nothing is taken.
  virtual bool on_body(std::string_view bytes) = 0;
  // The call ended: `error` is empty when the whole response came; `new_connections` is how many
  // connections it opened (0: a warm one was reused).
  virtual void on_done(const std::string& error, long new_connections) = 0;
};

struct UpstreamCall {
  std::string url;     // built by upstream_url(): scheme and host from the configured upstream only
  std::string method = "POST";
  std::vector<std::string> header_lines;  // "Name: value", hop-by-hop ones already left out
  std::shared_ptr<const std::string> body;
  // The answer's head within this (serve.request_timeout_ms); a streamed answer then lasts as
  // long as it keeps sending (a long output, extended thinking), bounded by stall_ms only.
  std::int64_t head_timeout_ms = 600000;
  std::int64_t stall_ms = 300000;     // no byte from the upstream for this long ends the call
};

// The settings every pool of a server shares.
struct UpstreamSettings {
  std::string ca_file;  // serve.ca_file: trust this bundle instead of the system's (a private upstream)
  // Told of a failure contained in a callback (an exception that would otherwise have crossed
  // libcurl's C frames and ended the process), `where` a short name for a metric label: counted
  // and logged by the server; the call it happened in fails alone.
  std::function<void(std::string_view where, std::string_view what)> fault;
};

class UpstreamPool {
 public:
  class Transfer;

  UpstreamPool(boost::asio::io_context& io, const UpstreamSettings& settings);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Starts a call; `listener` is kept alive until on_done() has been called or the call is
  // cancelled. Call on the pool's I/O thread only.
  std::shared_ptr<Transfer> start(const UpstreamCall& call, std::shared_ptr<UpstreamListener> listener);

  // Resumes a call paused by on_body(); cancels one (no on_done() then). Pool thread only.
  void resume(Transfer& t);
  void cancel(Transfer& t);

  std::size_t running() const { return transfers_.size(); }

  // Before any thread: libcurl's global state.
  static void global_init();

 private:
  struct Watch;
  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* pool, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* pool);
  static int on_socket_options(void*, curl_socket_t fd, curlsocktype purpose);
  void watch(int fd, int what);
  void arm(const std::shared_ptr<Watch>& w);
  void act(int fd, int events);
  void finish_done();
  // Ends a call that cannot go on (its socket could not be watched), from the loop.
  void abandon(CURL* easy, const std::string& why);

  boost::asio::io_context& io_;
  CURLM* multi_ = nullptr;
  boost::asio::steady_timer timer_;
  std::unordered_map<int, std::shared_ptr<Watch>> watches_;
  std::unordered_map<CURL*, std::shared_ptr<Transfer>> transfers_;
  UpstreamSettings settings_;
};

}  // namespace compactor::serve
