#include "serve/upstream_pool.hpp"

#include "serve/upstream_head.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <fmt/core.h>

#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

namespace compactor::serve {
namespace {

namespace asio = boost::asio;

// What the pools of one process share: resolved names and TLS session tickets (a new connection
// to a host another thread already reached resumes its TLS session).
struct Shared {
  CURLSH* share = nullptr;
  std::mutex locks[CURL_LOCK_DATA_LAST];
};

Shared& shared() {
  static Shared s;
  return s;
}

void lock_share(CURL*, curl_lock_data data, curl_lock_access, void*) { shared().locks[data].lock(); }
void unlock_share(CURL*, curl_lock_data data, void*) { shared().locks[data].unlock(); }

}  // namespace

class UpstreamPool::Transfer {
 public:
  UpstreamPool* pool = nullptr;
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  std::shared_ptr<const std::string> body;
  std::shared_ptr<UpstreamListener> listener;
  std::size_t sent = 0;  // of the body, to curl
  bool uploaded = false;
  UpstreamHead head;
  bool head_given = false;
  bool paused = false;
  std::string failure;  // why a callback ended the call (curl says only "write error")
  std::optional<asio::steady_timer> head_deadline;  // cancelled when the head has come

  ~Transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    curl_slist_free_all(header_list);
  }

  void give_head() {
    head_given = true;
    head_deadline.reset();
    release_body();
    listener->on_head(head.status(), head.take_fields());
  }

  // The body is kept until the whole of it went out and an answer came (curl sends it again on a
  // new connection when a reused one turns out closed before any answer): a held stream keeps none.
  void release_body() {
    if (uploaded && head_given) body.reset();
  }

  // Runs a callback's work; an exception stops here, inside this call, instead of crossing
  // curl's C frames (std::terminate). False: the call ends, `failure` says why.
  template <typename F>
  bool contained(const char* where, F&& work) {
    try {
      return work();
    } catch (const std::exception& e) {
      failure = fmt::format("serve failed handling the upstream's answer ({}): {}", where, e.what());
    } catch (...) {
      failure = fmt::format("serve failed handling the upstream's answer ({})", where);
    }
    if (pool->settings_.fault) pool->settings_.fault(where, failure);
    return false;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user);
  static std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user);
  static std::size_t on_read(char* data, std::size_t size, std::size_t n, void* user);
  static int on_seek(void* user, curl_off_t offset, int origin);
};

// One socket curl asked to watch; released (never closed: curl owns it) when curl is done with it.
struct UpstreamPool::Watch {
  Watch(asio::io_context& io, curl_socket_t s) : descriptor(io), fd(s) { descriptor.assign(s); }
  asio::posix::stream_descriptor descriptor;
  curl_socket_t fd;
  int what = 0;
  bool reading = false, writing = false, gone = false;
};

// Each line of the answer's head is checked as it comes (serve/upstream_head.hpp): one that
// Beast or the client could not take ends the call here, and the client gets a 502.
std::size_t UpstreamPool::Transfer::on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  if (t.head_given) return size * n;  // trailers: not passed on
  const bool go_on = t.contained("upstream_header", [&] {
    switch (t.head.line(std::string_view(data, size * n))) {
      case UpstreamHead::Step::more: return true;
      case UpstreamHead::Step::complete: t.give_head(); return true;
      case UpstreamHead::Step::refused: t.failure = t.head.refusal(); return false;
    }
    return false;
  });
  return go_on ? size * n : 0;
}

std::size_t UpstreamPool::Transfer::on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  bool pause = false;
  const bool go_on = t.contained("upstream_write", [&] {
    if (!t.head_given) {
      t.failure = "the upstream's answer body came before a complete head";
      return false;
    }
    pause = !t.listener->on_body(std::string_view(data, size * n));
    return true;
  });
  if (!go_on) return 0;
  if (pause) {
    t.paused = true;
    return CURL_WRITEFUNC_PAUSE;
  }
  return size * n;
}

std::size_t UpstreamPool::Transfer::on_read(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  if (!t.body) return 0;
  const std::size_t take = std::min(size * n, t.body->size() - t.sent);
  std::memcpy(data, t.body->data() + t.sent, take);
  t.sent += take;
  if (t.sent == t.body->size()) {
    t.uploaded = true;
    t.release_body();
  }
  return take;
}

int UpstreamPool::Transfer::on_seek(void* user, curl_off_t offset, int origin) {
  auto& t = *static_cast<Transfer*>(user);
  if (origin != SEEK_SET || !t.body || offset < 0 || static_cast<std::size_t>(offset) > t.body->size()) return CURL_SEEKFUNC_CANTSEEK;
  t.sent = static_cast<std::size_t>(offset);
  t.uploaded = false;
  return CURL_SEEKFUNC_OK;
}

// An upstream connection's receive buffer is fixed at 1 MiB (512 KiB asked; Linux doubles it),
// what a paused call may leave in the kernel: autotuning sizes it by rate times round trip, up
// to tcp_rmem's maximum (32 MiB here), for a fast transfer on a long path before the client fell
// behind. 512 KiB of window is 40 Mbit/s at 100 ms: far more than a model's stream.
int UpstreamPool::on_socket_options(void*, curl_socket_t fd, curlsocktype purpose) {
  if (purpose == CURLSOCKTYPE_IPCXN) {
    const int bytes = 512 * 1024;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
  return CURL_SOCKOPT_OK;
}

void UpstreamPool::global_init() {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  Shared& s = shared();
  s.share = curl_share_init();
  curl_share_setopt(s.share, CURLSHOPT_LOCKFUNC, lock_share);
  curl_share_setopt(s.share, CURLSHOPT_UNLOCKFUNC, unlock_share);
  curl_share_setopt(s.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(s.share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
}

UpstreamPool::UpstreamPool(asio::io_context& io, const UpstreamSettings& settings)
    : io_(io), multi_(curl_multi_init()), timer_(io), settings_(settings) {
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  // Idle connections kept per pool, over every host (curl closes the oldest past it).
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, 256L);
}

UpstreamPool::~UpstreamPool() {
  for (auto& [easy, t] : transfers_) curl_multi_remove_handle(multi_, easy);
  transfers_.clear();
  for (auto& [fd, w] : watches_) {
    w->gone = true;
    w->descriptor.release();
  }
  watches_.clear();
  curl_multi_cleanup(multi_);
}

std::shared_ptr<UpstreamPool::Transfer> UpstreamPool::start(const UpstreamCall& call, std::shared_ptr<UpstreamListener> listener) {
  auto t = std::make_shared<Transfer>();
  t->pool = this;
  t->easy = curl_easy_init();
  t->listener = std::move(listener);
  t->body = call.body;
  for (const auto& line : call.header_lines) t->header_list = curl_slist_append(t->header_list, line.c_str());
  t->header_list = curl_slist_append(t->header_list, "Expect:");
  const bool no_body = t->body == nullptr || t->body->empty();
  if (no_body) t->header_list = curl_slist_append(t->header_list, "Content-Type:");
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, call.url.c_str());
  // The path goes out as upstream_url() built and checked it: curl removes no dot segment.
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
  // Only HTTP and HTTPS, also after a redirect (which is refused anyway: it would resend the
  // client's key to another host).
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->header_list);
  // Through an HTTPS proxy, its answer to CONNECT is not the upstream's.
  curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_SHARE, shared().share);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  // No CURLOPT_TIMEOUT: it counts a whole streamed answer. The head has a deadline of its own.
  // A stall: less than one byte a second for stall_ms (curl counts in whole seconds).
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(call.stall_ms / 1000)));
  // HTTP/1.1, not curl's HTTP/2 for https: libcurl 7.88 opens every HTTP/2 stream with a 32 MiB
  // window and has no option to shrink it, so a stream paused for a slow client still takes in
  // up to 32 MiB (measured: tools/bench/paused_stream_memory.py). Over HTTP/1.1 a paused call
  // stops reading its own connection, whose receive buffer is bounded (on_socket_options).
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_socket_options);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (!settings_.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, settings_.ca_file.c_str());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, Transfer::on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, Transfer::on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  if (call.method == "GET") {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else if (call.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else {
    // The body is read from the shared string as curl sends it (no copy), and let go of once sent.
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    curl_easy_setopt(e, CURLOPT_READFUNCTION, Transfer::on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, t.get());
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, Transfer::on_seek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, t.get());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(no_body ? 0 : t->body->size()));
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);  // the least: thousands of calls may be open
    if (no_body) t->uploaded = true;
  }
  transfers_.emplace(e, t);
  t->head_deadline.emplace(io_, std::chrono::milliseconds(call.head_timeout_ms));
  t->head_deadline->async_wait([this, e, ms = call.head_timeout_ms, weak = std::weak_ptr<Transfer>(t)](const boost::system::error_code& ec) {
    auto held = weak.lock();
    if (ec || !held || held->head_given) return;
    abandon(e, fmt::format("no answer head from the upstream within serve.request_timeout_ms ({} ms)", ms));
  });
  if (curl_multi_add_handle(multi_, e) != CURLM_OK) {
    transfers_.erase(e);
    auto l = t->listener;
    asio::post(io_, [l] { l->on_done("cannot start the upstream call", 0); });
  }
  return t;
}

void UpstreamPool::resume(Transfer& t) {
  if (!t.paused || transfers_.count(t.easy) == 0) return;
  t.paused = false;
  // May hand the held bytes to on_write() at once (which may pause it again).
  curl_easy_pause(t.easy, CURLPAUSE_CONT);
}

void UpstreamPool::cancel(Transfer& t) {
  auto it = transfers_.find(t.easy);
  if (it == transfers_.end()) return;
  auto keep = it->second;
  curl_multi_remove_handle(multi_, t.easy);
  transfers_.erase(it);
  keep->listener.reset();
}

// Nothing may leave a curl callback by an exception: a socket that cannot be watched ends the
// one call it belongs to (from the loop: curl must not be re-entered from here).
int UpstreamPool::on_socket(CURL* easy, curl_socket_t fd, int what, void* pool, void*) {
  auto* self = static_cast<UpstreamPool*>(pool);
  try {
    self->watch(fd, what);
  } catch (const std::exception& e) {
    const std::string why = fmt::format("serve could not watch the upstream's socket: {}", e.what());
    if (self->settings_.fault) self->settings_.fault("upstream_socket", why);
    asio::post(self->io_, [self, easy, why] { self->abandon(easy, why); });
  }
  return 0;
}

int UpstreamPool::on_timer(CURLM*, long timeout_ms, void* pool) {
  auto* self = static_cast<UpstreamPool*>(pool);
  if (timeout_ms < 0) {
    self->timer_.cancel();
    return 0;
  }
  try {
    // Never act from inside curl's own call: even a zero timeout goes through the loop.
    self->timer_.expires_after(std::chrono::milliseconds(timeout_ms));
    self->timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->act(CURL_SOCKET_TIMEOUT, 0);
    });
  } catch (const std::exception& e) {
    if (self->settings_.fault) self->settings_.fault("upstream_timer", e.what());
    return -1;
  }
  return 0;
}

void UpstreamPool::abandon(CURL* easy, const std::string& why) {
  auto it = transfers_.find(easy);
  if (it == transfers_.end()) return;
  auto t = it->second;
  transfers_.erase(it);
  curl_multi_remove_handle(multi_, easy);
  if (auto listener = std::move(t->listener)) listener->on_done(why, 0);
}

void UpstreamPool::watch(curl_socket_t fd, int what) {
  if (what == CURL_POLL_REMOVE) {
    auto it = watches_.find(fd);
    if (it == watches_.end()) return;
    it->second->gone = true;
    it->second->descriptor.release();  // cancels its waits; curl closes the socket itself
    watches_.erase(it);
    return;
  }
  auto& w = watches_[fd];
  if (!w) w = std::make_shared<Watch>(io_, fd);
  w->what = what;
  arm(w);
}

// Waits for what curl wants of the socket. Each wait is a fresh epoll registration in Asio's
// reactor, so a socket that is still readable after curl's last read wakes the loop again.
void UpstreamPool::arm(const std::shared_ptr<Watch>& w) {
  using Wait = asio::posix::descriptor_base::wait_type;
  auto wait = [this, w](Wait type, bool Watch::*flag, int event) {
    (*w).*flag = true;
    w->descriptor.async_wait(type, [this, w, flag, event](const boost::system::error_code& ec) {
      (*w).*flag = false;
      if (ec || w->gone) return;
      act(w->fd, event);
      if (!w->gone) arm(w);
    });
  };
  if ((w->what & CURL_POLL_IN) != 0 && !w->reading) wait(asio::posix::descriptor_base::wait_read, &Watch::reading, CURL_CSELECT_IN);
  if ((w->what & CURL_POLL_OUT) != 0 && !w->writing) wait(asio::posix::descriptor_base::wait_write, &Watch::writing, CURL_CSELECT_OUT);
}

void UpstreamPool::act(curl_socket_t fd, int events) {
  int running = 0;
  curl_multi_socket_action(multi_, fd, events, &running);
  finish_done();
}

void UpstreamPool::finish_done() {
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* easy = m->easy_handle;
    const CURLcode rc = m->data.result;
    auto it = transfers_.find(easy);
    if (it == transfers_.end()) continue;
    auto t = it->second;
    transfers_.erase(it);
    long connects = 0;
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
    curl_multi_remove_handle(multi_, easy);
    std::string error = rc == CURLE_OK ? std::string() : !t->failure.empty() ? t->failure : std::string(curl_easy_strerror(rc));
    if (error.empty() && !t->head_given) error = "the upstream's answer ended before its head did";
    auto listener = std::move(t->listener);
    if (listener) listener->on_done(error, connects);
  }
}

}  // namespace compactor::serve
