// serve's protections as a shared gateway needs them, each against the behaviour it stops: a head
// sent slowly (serve.header_timeout_ms), a body sent slowly (serve.body_timeout_ms), an upstream
// that stops sending (serve.upstream_stall_ms), a pipeline queue that does not move
// (serve.queue_timeout_ms), more connections than serve.max_connections, a client that stops
// reading while the upstream floods (backpressure: the upstream is paused, serve's memory stays
// bounded) and a hundred streams held at once. Small configured limits (300 ms; the stall's
// 1 s is curl's least) and waits for states, each bounded, never a sleep that guesses.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/stream_upstream.hpp"
#include "support/test_support.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <thread>

namespace compactor {
namespace {

using test::metric;
namespace fs = std::filesystem;
namespace http = boost::beast::http;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ServeProcess;
using test::StreamUpstream;
using Clock = std::chrono::steady_clock;

std::string write_config(const fs::path& dir, const std::string& serve, const std::string& pipeline = "") {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\", \"" << COMPACTOR_TEST_PLUGIN_DIR << "\"]\n"
                                << (pipeline.empty() ? "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n" : pipeline)
                                << "serve: " << serve << "\n";
  return "c.yaml";
}

const std::string kBody = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
const std::string kStreamBody = R"({"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]})";

std::string post(const std::string& body, const std::string& extra_headers = "") {
  return "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: sk-ant-k\r\n" + extra_headers +
         "content-length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A test that failed may leave a request in flight (a stream never resumed, connections serve never
// took), which serve's drain on SIGTERM would wait for up to serve.request_timeout_ms: then serve
// is ended at once instead. Declared after the ServeProcess, so it runs first.
struct EndAtOnceIfFailed {
  ServeProcess& serve;
  ~EndAtOnceIfFailed() {
    if (::testing::Test::HasFailure()) serve.kill_hard();
  }
};

// A client connection written and read by hand, each wait bounded.
class Client {
 public:
  // `receive_buffer`: asked of the kernel before connecting (0: its own, which grows as it likes).
  explicit Client(unsigned short port, int receive_buffer = 0) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  bool send(const std::string& bytes) { return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
  // Reads what is there within `wait`: false when the server closed the connection (or reset it).
  bool read_some(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return true;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return open_ = false;
    received.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  // Until `text` has arrived (true), or the connection closed or `limit` passed (false).
  bool read_until(const std::string& text, std::chrono::seconds limit = std::chrono::seconds(30)) {
    for (auto end = Clock::now() + limit; received.find(text) == std::string::npos;)
      if (Clock::now() > end || !read_some(std::chrono::milliseconds(100))) return received.find(text) != std::string::npos;
    return true;
  }
  // Until the server closes the connection (true), reading what comes; `trickle`, when not empty,
  // is sent every 50 ms meanwhile (a client that keeps sending, slowly). False after `limit`.
  bool wait_closed(std::chrono::seconds limit, const std::string& trickle = "") {
    for (auto end = Clock::now() + limit; Clock::now() < end;) {
      if (!read_some(std::chrono::milliseconds(50))) return true;
      if (!trickle.empty() && !send(trickle)) return true;  // reset: closed
    }
    return false;
  }
  std::size_t receive_buffer() const {
    int size = 0;
    socklen_t len = sizeof size;
    ::getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, &len);
    return static_cast<std::size_t>(size);
  }
  std::string received;

 private:
  int fd_;
  bool connected_ = false, open_ = true;
};

// A head that never ends, a line every 50 ms: cut at serve.header_timeout_ms (300 ms) although
// bytes keep coming; an idle keep-alive connection the same. The body limit is a minute, so only
// the head's deadline can close these.
TEST(ServeLimits, AHeadSentSlowlyIsCutAtTheHeaderTimeout) {
  test::ScratchFolder dir("serve-limits-head");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir.path(), write_config(dir.path(), "{header_timeout_ms: 300, body_timeout_ms: 60000}"), upstream.base_url());
  Client slow(serve.port());
  ASSERT_TRUE(slow.send("POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\n"));
  EXPECT_TRUE(slow.wait_closed(std::chrono::seconds(20), "x-slow: 1\r\n")) << "a head sent for 20 s was never cut";
  EXPECT_TRUE(slow.received.empty()) << slow.received;

  Client idle(serve.port());
  ASSERT_TRUE(idle.send("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"));
  ASSERT_TRUE(idle.read_until("ok\n")) << idle.received;
  EXPECT_TRUE(idle.wait_closed(std::chrono::seconds(20))) << "an idle keep-alive connection was never closed";
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_EQ(call(serve.port(), "GET", "/healthz").status, 200);
}

// A body that never ends, a byte every 50 ms: cut at serve.body_timeout_ms (300 ms) although the
// head's limit is a minute; nothing reaches the upstream.
TEST(ServeLimits, ABodySentSlowlyIsCutAtTheBodyTimeout) {
  test::ScratchFolder dir("serve-limits-body");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir.path(), write_config(dir.path(), "{header_timeout_ms: 60000, body_timeout_ms: 300}"), upstream.base_url());
  Client slow(serve.port());
  ASSERT_TRUE(slow.send("POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{"));
  EXPECT_TRUE(slow.wait_closed(std::chrono::seconds(20), " ")) << "a body sent for 20 s was never cut";
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_EQ(call(serve.port(), "GET", "/healthz").status, 200);
}

// An upstream that stops sending mid-stream, and one that never answers: each call ends once the
// upstream has been silent for serve.upstream_stall_ms (1 s, curl's least; the whole call may take a
// minute). curl averages its speed over its last five seconds, so the end comes some 6 s after the
// last byte (both cases run at once). The stream is cut (closed before its last chunk: the client
// knows it is incomplete), the silent one answered 502, each counted as an upstream failure.
TEST(ServeLimits, AnUpstreamThatStopsSendingEndsTheCallAtTheStallLimit) {
  test::ScratchFolder dir("serve-limits-stall");
  fs::create_directories(dir / "stream");
  fs::create_directories(dir / "silent");
  const std::string limits = "{upstream_stall_ms: 1000, request_timeout_ms: 60000}";
  StreamUpstream stalled(StreamUpstream::Mode::stall), silent(StreamUpstream::Mode::silent);
  ServeProcess serve_stream(dir / "stream", write_config(dir / "stream", limits), stalled.base_url());
  ServeProcess serve_silent(dir / "silent", write_config(dir / "silent", limits), silent.base_url());
  EndAtOnceIfFailed end_stream{serve_stream}, end_silent{serve_silent};
  auto answer = std::async(std::launch::async, [&] { return call(serve_silent.port(), "POST", "/v1/messages", kBody); });
  Client client(serve_stream.port());
  ASSERT_TRUE(client.send(post(kStreamBody)));
  ASSERT_TRUE(client.read_until("message_start")) << client.received;
  EXPECT_TRUE(client.wait_closed(std::chrono::seconds(30))) << "a stalled stream was never cut";
  EXPECT_EQ(client.received.find("0\r\n\r\n"), std::string::npos) << "the cut stream ended as if complete";
  EXPECT_EQ(metric(serve_stream.port(), "compactor_serve_upstream_errors_total{status=\"0\"}"), 1);
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a silent upstream was waited for 30 s";
  Reply r = answer.get();
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_NE(r.body.find("upstream failed"), std::string::npos) << r.body;
  EXPECT_EQ(metric(serve_silent.port(), "compactor_serve_upstream_errors_total{status=\"0\"}"), 1);
}

// One worker, held in its stage: the next request waits in the queue for serve.queue_timeout_ms
// (300 ms), then goes out as it came (x-compactor-status: failed, the limit named), counted as
// reason="queue_timeout", while the first is still held: it never waited for the worker.
TEST(ServeLimits, ARequestThatWaitsPastTheQueueTimeoutGoesOutUncompacted) {
  test::ScratchFolder dir("serve-limits-queue");
  const fs::path log = dir / "stage.log", release = dir / "release";
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("second")}, {200, {}, test::anthropic_reply("first")}});
  ServeProcess serve(dir.path(), write_config(dir.path(), "{workers: 1, queue_timeout_ms: 300}", "pipeline:\n  - stage: misbehave\n    params: {mode: hold}\n"),
                     upstream.base_url(), "serve", {{"COMPACTOR_TEST_STAGE_LOG", log.string()}, {"COMPACTOR_TEST_HOLD_FILE", release.string()}});
  auto first = std::async(std::launch::async, [&] { return call(serve.port(), "POST", "/v1/messages", kBody); });
  bool held = false;
  for (int i = 0; i < 2000 && !(held = fs::exists(log)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto second = std::async(std::launch::async, [&] { return call(serve.port(), "POST", "/v1/messages", kBody); });
  const bool answered = held && second.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  const bool first_still_held = first.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  std::ofstream(release) << "go";
  ASSERT_TRUE(held) << "the first request's stage never started";
  ASSERT_TRUE(answered) << "the queued request waited for the worker";
  EXPECT_TRUE(first_still_held);
  Reply r = second.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, test::anthropic_reply("second"));
  EXPECT_EQ(r.headers["x-compactor-status"], "failed");
  EXPECT_NE(r.headers["x-compactor-warning"].find("serve.queue_timeout_ms (300 ms)"), std::string::npos) << r.headers["x-compactor-warning"];
  EXPECT_EQ(upstream.requests().at(0).body, kBody);
  EXPECT_EQ(first.get().status, 200);
  EXPECT_EQ(metric(serve.port(), "compactor_serve_rejections_total{reason=\"queue_timeout\"}"), 1);
}

// The connections waiting in the listening socket's accept queue (Linux shows a listener's queue
// as its rx_queue in /proc/net/tcp).
long accept_queue(unsigned short port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  char local[64];
  std::snprintf(local, sizeof local, ":%04X", port);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, address, remote, state, queues;
    f >> slot >> address >> remote >> state >> queues;
    if (state == "0A" && address.size() > 5 && address.substr(address.size() - 5) == local)
      return std::stol(queues.substr(queues.find(':') + 1), nullptr, 16);
  }
  return -1;
}

// At serve.max_connections (2) serve stops accepting: the third connection waits in the kernel's
// accept queue (not refused, not answered) while serve counts two open; when one closes, the
// third is taken and answered.
TEST(ServeLimits, PastMaxConnectionsTheNextWaitsInTheAcceptQueueUntilOneCloses) {
  test::ScratchFolder dir("serve-limits-connections");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir.path(), write_config(dir.path(), "{max_connections: 2}"), upstream.base_url());
  auto first = std::make_unique<Client>(serve.port());
  Client second(serve.port());
  for (Client* c : {first.get(), &second}) {
    ASSERT_TRUE(c->send("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"));
    ASSERT_TRUE(c->read_until("ok\n")) << c->received;  // accepted, and kept open
  }
  Client third(serve.port());
  ASSERT_TRUE(third.connected());
  ASSERT_TRUE(third.send("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"));
  bool queued = false;
  for (int i = 0; i < 2000 && !(queued = accept_queue(serve.port()) == 1); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(queued) << "the third connection never waited in the accept queue (" << accept_queue(serve.port()) << ")";
  // Asked on a connection serve already has: two open, and the third still not taken after.
  ASSERT_TRUE(second.send("GET /metrics HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"));
  ASSERT_TRUE(second.read_until("compactor_serve_open_connections ")) << second.received;
  ASSERT_TRUE(second.read_until("compactor_serve_in_flight")) << second.received;
  EXPECT_NE(second.received.find("\ncompactor_serve_open_connections 2\n"), std::string::npos) << second.received;
  EXPECT_EQ(accept_queue(serve.port()), 1);
  EXPECT_TRUE(third.received.empty()) << third.received;
  first.reset();
  EXPECT_TRUE(third.read_until("ok\n")) << "the third connection was not taken when one closed";
}

// The most the kernel of this machine lets serve's own sockets hold: the upstream connection's
// receive buffer and the client connection's send buffer, each at most tcp_rmem's and tcp_wmem's
// largest (autotuned; serve sets neither).
std::size_t serve_socket_buffers() {
  auto largest = [](const char* file) {
    std::ifstream in(file);
    std::size_t least = 0, fallback = 0, most = 0;
    in >> least >> fallback >> most;
    return most;
  };
  return largest("/proc/sys/net/ipv4/tcp_rmem") + largest("/proc/sys/net/ipv4/tcp_wmem");
}

long rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// The upstream floods 64 MiB of events at a client that reads its first event and then nothing.
// serve pauses the upstream call once 64 KiB wait for the client, so what the upstream can write is
// bounded by the buffers on the way: its own send buffer and the client's receive buffer (both set
// small by the test), serve's two sockets' (this machine's largest), and what serve keeps itself
// (that 64 KiB and curl's paused chunk: 1 MiB allowed). Buffering the flood instead, serve would
// take all of it. serve's resident memory may grow by 16 MiB (its 1 MiB, allocator and sanitizer
// slack), not by the tens of MiB of a buffered flood. When the client reads again the call
// resumes and every byte arrives, in order.
TEST(ServeLimits, AClientThatStopsReadingPausesTheUpstreamAndServesMemoryStaysBounded) {
  test::ScratchFolder dir("serve-limits-backpressure");
  const std::size_t flood = std::size_t{64} << 20;
  StreamUpstream upstream(StreamUpstream::Mode::flood, flood);
  ServeProcess serve(dir.path(), write_config(dir.path(), "{upstream_stall_ms: 600000}"), upstream.base_url());
  EndAtOnceIfFailed end_at_once{serve};
  ASSERT_EQ(call(serve.port(), "GET", "/healthz").status, 200);
  const long before = rss_kb(serve.pid());
  Client client(serve.port(), 64 * 1024);
  ASSERT_TRUE(client.send(post(kStreamBody)));
  ASSERT_TRUE(client.read_until("message_start")) << client.received;
  const std::size_t bound = upstream.send_buffer() + client.receive_buffer() + serve_socket_buffers() + (std::size_t{1} << 20);
  ASSERT_GT(upstream.send_buffer(), 0u);
  ASSERT_LT(bound + (std::size_t{16} << 20), flood) << "this machine's socket buffers could hold most of the flood";
  // The client now reads nothing. Wait until the upstream can write no more (no progress over
  // twenty looks 50 ms apart: the state, seen as the lack of progress) or has written everything.
  std::size_t written = 0;
  for (int still = 0, i = 0; still < 20 && i < 1200 && !upstream.flood_done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::size_t now = upstream.flood_written();
    still = now == written ? still + 1 : 0;
    written = now;
  }
  const long grown_kb = rss_kb(serve.pid()) - before;
  EXPECT_FALSE(upstream.flood_done()) << "serve took the whole flood from the upstream while its client read nothing";
  EXPECT_LE(written, bound) << "the upstream wrote " << written << " bytes while the client read nothing";
  EXPECT_LT(grown_kb, 16 * 1024) << "serve's memory grew by " << grown_kb << " KiB while its client read nothing";
  std::printf("backpressure: the upstream wrote %zu bytes of %zu (bound %zu); serve grew by %ld KiB\n", written, flood, bound, grown_kb);

  // Reading again: the paused call resumes and the stream completes.
  ASSERT_TRUE(client.read_until("\r\n0\r\n\r\n", std::chrono::seconds(60))) << "the stream never completed after the client read again";
  http::response_parser<http::string_body> parser;
  parser.body_limit(flood * 2);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(client.received), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_done());
  const std::string& body = parser.get().body();
  const std::string& first = StreamUpstream::first_event();
  const std::string event = StreamUpstream::flood_event();
  const std::size_t events = (flood - first.size() + event.size() - 1) / event.size();
  ASSERT_EQ(body.size(), first.size() + events * event.size());
  EXPECT_EQ(body.compare(0, first.size(), first), 0);
  for (std::size_t i = 0, at = first.size(); i < events; ++i, at += event.size())
    ASSERT_EQ(body.compare(at, event.size(), event), 0) << "event " << i;
}

// A hundred streamed calls held open at once (the first server refused past 32): every client has
// its first event while the upstream still holds all hundred, serve counts them in flight, and
// once released each stream ends whole.
TEST(ServeLimits, AHundredStreamsAreHeldAtOnce) {
  test::ScratchFolder dir("serve-limits-streams");
  constexpr int kStreams = 100;
  StreamUpstream upstream(StreamUpstream::Mode::held);
  ServeProcess serve(dir.path(), write_config(dir.path(), "{}"), upstream.base_url());
  EndAtOnceIfFailed end_at_once{serve};
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(std::make_unique<Client>(serve.port()));
    ASSERT_TRUE(clients.back()->send(post(kStreamBody)));
  }
  std::atomic<int> first_events{0};
  std::vector<std::thread> readers;
  for (auto& c : clients)
    readers.emplace_back([&c, &first_events] {
      if (c->read_until(StreamUpstream::first_event(), std::chrono::seconds(30))) ++first_events;
    });
  for (auto& t : readers) t.join();
  readers.clear();
  const bool all_held = upstream.requests() == kStreams && first_events == kStreams;
  // (Asked only when serve took every connection: a new one would wait behind those it did not.)
  const double in_flight = all_held ? metric(serve.port(), "compactor_serve_in_flight") : -1;
  upstream.release();
  ASSERT_TRUE(all_held) << first_events << " of " << kStreams << " clients had their first event; the upstream had "
                        << upstream.requests() << " requests";
  EXPECT_EQ(in_flight, kStreams);
  std::atomic<int> whole{0};
  for (auto& c : clients)
    readers.emplace_back([&c, &whole] {
      if (c->read_until("\r\n0\r\n\r\n", std::chrono::seconds(60))) ++whole;
    });
  for (auto& t : readers) t.join();
  EXPECT_EQ(whole, kStreams);
  for (auto& c : clients) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    boost::beast::error_code ec;
    parser.put(boost::asio::buffer(c->received), ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(parser.get().body(), StreamUpstream::first_event() + StreamUpstream::rest());
  }
}

}  // namespace
}  // namespace compactor
