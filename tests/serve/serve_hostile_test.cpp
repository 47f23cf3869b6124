// `compactor serve` against hostile upstreams and clients (a gateway review's findings): an
// answer head Beast cannot hold, a target that would leave the upstream's base path, /mcp read
// before it is authenticated, heads that all pass the queue's bound together, a client that
// leaves while its call waits, a stream longer than the request's time. Each test failed
// against the compactor before its fix (run with the old binary in place of build/bin/compactor).
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <filesystem>
#include <fstream>
#include <thread>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;

std::string write_config(const fs::path& dir, const std::string& extra, const std::string& pipeline = "") {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\", \"" << COMPACTOR_TEST_PLUGIN_DIR << "\"]\n"
                                << (pipeline.empty() ? "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n" : pipeline)
                                << extra;
  return "c.yaml";
}

template <typename F>
bool eventually(F done, int ms = 20000) {
  for (int i = 0; i < ms / 10; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

const std::string kBody = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";

// What a client read: an answer (any head size), or nothing before the connection closed or
// `patience` passed with no byte.
struct RawAnswer {
  bool answered = false;  // a whole head came
  bool complete = false;  // and the whole body
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
};

// A client that writes what it is given, as it is given (a head now, a body later, or never).
class RawClient {
 public:
  explicit RawClient(unsigned short port) : socket_(io_) { socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port)); }
  void send(std::string_view bytes) {
    beast::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
  }
  // Waits for each piece with poll (Asio's blocking reads wait through SO_RCVTIMEO).
  RawAnswer read(std::chrono::milliseconds patience = std::chrono::milliseconds(20000)) {
    http::response_parser<http::string_body> parser;
    parser.header_limit(1u << 20);
    parser.body_limit(1u << 30);
    parser.eager(true);
    beast::error_code ec;
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!parser.is_done()) {
      if (buffer_.size() > 0) {
        const std::size_t used = parser.put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == http::error::need_more) ec = {};
        if (ec || parser.is_done()) break;
        if (used > 0) continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd p{socket_.native_handle(), POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      const std::size_t n = socket_.read_some(buffer_.prepare(64 * 1024), ec);
      if (ec) {
        if (ec == asio::error::eof && parser.is_header_done()) parser.put_eof(ec);  // a body that ends with the connection
        break;
      }
      buffer_.commit(n);
    }
    RawAnswer a;
    if (!parser.is_header_done()) return a;
    a.answered = true;
    a.complete = parser.is_done();
    a.status = static_cast<int>(parser.get().result_int());
    for (const auto& f : parser.get()) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      a.headers[name] = std::string(f.value());
    }
    a.body = parser.get().body();
    return a;
  }
  void close() {
    beast::error_code ec;
    socket_.close(ec);
  }
  int native_handle() { return socket_.native_handle(); }
  // Reads the raw bytes of a stream until they hold `text` (false when the connection ended or
  // `patience` passed first); what was read stays read.
  bool read_raw_until(std::string_view text, std::chrono::milliseconds patience = std::chrono::milliseconds(20000)) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (raw_.find(text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd p{socket_.native_handle(), POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      char bytes[4096];
      beast::error_code ec;
      const std::size_t n = socket_.read_some(asio::buffer(bytes), ec);
      if (ec) return false;
      raw_.append(bytes, n);
    }
    return true;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  std::string raw_;
};

std::string request_head(const std::string& method, const std::string& target, unsigned short port,
                         const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  std::string out = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  return out + "\r\n";
}

std::string metrics_of(const ServeProcess& serve) { return call(serve.port(), "GET", "/metrics").body; }

// --- 1. An upstream's answer head that Beast cannot hold ---------------------------------------

std::string raw_answer(const std::string& fields, const std::string& body = "{}") {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + fields + "Content-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// A field of 70,000 bytes threw std::length_error from Beast's fields inside curl's header
// callback, and the process ended (every tenant's streams with it). Now such a head, or one
// of many fields over 64 KiB in all (an interim 1xx head's bytes counted with the final one's),
// or one that would split the client's answer, is refused with the API's 502; the server lives
// on, and a head under the limit passes byte for byte.
TEST(ServeHostile, AnOversizedOrMalformedUpstreamHeadIsA502AndTheServerLivesOn) {
  test::ScratchFolder dir("serve-hostile-head");
  std::string many;
  for (int i = 0; i < 100; ++i) many += "x-field-" + std::to_string(i) + ": " + std::string(1000, 'm') + "\r\n";
  const std::string big_but_allowed(30000, 'b');
  std::vector<ScriptedResponse> script;
  for (const std::string& fields : {"x-huge: " + std::string(70000, 'h') + "\r\n", many, std::string("x-folded: a\r\n b\r\n"),
                                    std::string("x-split: a\rb\r\n"), "x-big: " + big_but_allowed + "\r\n"}) {
    ScriptedResponse r;
    r.raw = raw_answer(fields);
    script.push_back(r);
  }
  // Each head under 64 KiB, the two together over it.
  ScriptedResponse interim;
  interim.raw = "HTTP/1.1 103 Early Hints\r\nx-hint: " + std::string(40000, 'e') + "\r\n\r\n" + raw_answer("x-big: " + big_but_allowed + "\r\n");
  script.insert(script.begin() + 4, interim);
  script.push_back(ScriptedResponse{200, {}, test::anthropic_reply("after")});
  LoopbackHttpServer upstream(script);
  ServeProcess serve(dir.path(), write_config(dir.path(), ""), upstream.base_url());
  for (const char* what : {"a 70,000-byte field", "100 fields of 1,000 bytes", "a folded line", "a bare CR",
                           "a 40,000-byte 1xx head before a 30,000-byte head"}) {
    RawClient client(serve.port());
    client.send(request_head("GET", "/v1/models", serve.port()));
    RawAnswer a = client.read();
    ASSERT_TRUE(a.answered) << what << ": no answer (the server ended?)";
    EXPECT_EQ(a.status, 502) << what << ": " << a.body;
    EXPECT_EQ(json::parse(a.body).at("error").at("type"), "api_error") << a.body;
  }
  RawClient client(serve.port());
  client.send(request_head("GET", "/v1/models", serve.port()));
  RawAnswer a = client.read();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.headers["x-big"], big_but_allowed);
  Reply after = call(serve.port(), "POST", "/v1/messages", kBody);
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, test::anthropic_reply("after"));
  const std::string metrics = metrics_of(serve);
  EXPECT_NE(metrics.find("compactor_serve_upstream_errors_total{status=\"0\"} 5"), std::string::npos) << metrics;
  serve.stop();
  for (const char* said : {"upstream failed: the upstream's answer head is over 65536 bytes",
                           "upstream failed: the upstream's answer head has a line that is no field",
                           "upstream failed: the upstream's answer field x-split holds a control character"})
    EXPECT_NE(serve.stderr_text().find(said), std::string::npos) << said << "\n" << serve.stderr_text();
}

// --- 2. The target stays under the upstream's base path ---------------------------------------

// With the upstream at /gw/anthropic, "GET /../../admin/secret" reached /admin/secret (curl
// removed the dot segments) and %2e%2e went through for the upstream to decode. Every spelling
// of a dot segment is refused with 400 in the API's shape, and nothing reaches the upstream;
// dots inside a name and a query pass as written.
TEST(ServeHostile, ATargetNeverLeavesTheUpstreamsBasePath) {
  test::ScratchFolder dir("serve-hostile-path");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(3, ScriptedResponse{200, {}, "{}"}));
  ServeProcess serve(dir.path(), write_config(dir.path(), ""), upstream.base_url() + "/gw/anthropic");
  for (const std::string target : {"/../../admin/secret", "/v1/../../admin", "/v1/..", "/./v1/models", "/%2e%2e/%2e%2e/admin",
                                   "/%2E%2e/admin", "/.%2E/admin", "/v1/..%2f..%2fadmin", "/v1/..%2F..%2Fadmin",
                                   "/v1/..%5c..%5cadmin", "/v1/..\\..\\admin", "/v1/%2e/models"}) {
    RawClient client(serve.port());
    client.send(request_head("GET", target, serve.port()));
    RawAnswer a = client.read();
    ASSERT_TRUE(a.answered) << target;
    EXPECT_EQ(a.status, 400) << target << ": " << a.body;
    EXPECT_EQ(json::parse(a.body).at("error").at("type"), "invalid_request_error") << target << ": " << a.body;
  }
  EXPECT_TRUE(upstream.requests().empty()) << upstream.requests()[0].target;
  for (const std::string target : {"/v1/models", "/v1/files/a..b/c.d", "/v1/models?after=/../x"}) {
    RawClient client(serve.port());
    client.send(request_head("GET", target, serve.port()));
    EXPECT_EQ(client.read().status, 200) << target;
  }
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].target, "/gw/anthropic/v1/models");
  EXPECT_EQ(got[1].target, "/gw/anthropic/v1/files/a..b/c.d");
  EXPECT_EQ(got[2].target, "/gw/anthropic/v1/models?after=/../x");
  EXPECT_NE(metrics_of(serve).find("compactor_serve_rejections_total{reason=\"target\"} 12"), std::string::npos) << metrics_of(serve);
}

// --- 5. /mcp: authenticated and limited from its head, its queue bounded ---------------------

const std::string kPing = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";

// /mcp read a body of up to 32 MiB before it authenticated the caller and checked its own 1 MiB
// limit after the read. Now a stranger's head is answered 401 and an oversized one 413 before
// any of the body is sent (the old server waited for the body, and closed at body_timeout_ms
// without a word), and a chunked body stops at 1 MiB.
TEST(ServeHostile, McpIsAuthenticatedAndLimitedBeforeItsBodyIsRead) {
  test::ScratchFolder dir("serve-hostile-mcp");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir.path(), write_config(dir.path(), "serve: {mcp_token_env: MCP_TEST_TOKEN, body_timeout_ms: 3000}\n"),
                     upstream.base_url(), "serve", {{"MCP_TEST_TOKEN", "s3cret"}});
  const std::pair<std::string, std::string> bearer{"Authorization", "Bearer s3cret"};
  {  // a stranger announcing 32 MiB: refused from the head
    RawClient client(serve.port());
    client.send(request_head("POST", "/mcp", serve.port(), {{"Content-Type", "application/json"}, {"Content-Length", "33554432"}}));
    RawAnswer a = client.read();
    ASSERT_TRUE(a.answered) << "no answer before the body: the body was waited for";
    EXPECT_EQ(a.status, 401) << a.body;
  }
  {  // the token, and 2 MiB announced: over /mcp's own limit, refused from the head
    RawClient client(serve.port());
    client.send(request_head("POST", "/mcp", serve.port(), {{"Content-Type", "application/json"}, {"Content-Length", "2097152"}, bearer}));
    RawAnswer a = client.read();
    ASSERT_TRUE(a.answered) << "no answer before the body: the body was waited for";
    EXPECT_EQ(a.status, 413) << a.body;
    EXPECT_EQ(json::parse(a.body).at("error").at("code"), -32600) << a.body;
  }
  {  // chunked: refused once past 1 MiB, the rest never sent
    RawClient client(serve.port());
    client.send(request_head("POST", "/mcp", serve.port(), {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}, bearer}));
    const std::string chunk(256 * 1024, ' ');
    for (int i = 0; i < 6; ++i) client.send(fmt::format("{:x}\r\n{}\r\n", chunk.size(), chunk));
    RawAnswer a = client.read();
    ASSERT_TRUE(a.answered) << "no answer before the body ended: the body was waited for";
    EXPECT_EQ(a.status, 413) << a.body;
  }
  Reply ok = call(serve.port(), "POST", "/mcp", kPing, {{"authorization", "Bearer s3cret"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

// A Redis that takes connections and never answers (its listener never accepts): every archive
// read waits on it, and /mcp's threads with them.
class SilentRedis {
 public:
  SilentRedis() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // not inherited by serve: closing it here closes it
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 64);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentRedis() { release(); }
  unsigned short port() const { return port_; }
  // Closing the listener resets the connections it held: the reads waiting on them fail now.
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  unsigned short port_ = 0;
};

// /mcp's work went to an unbounded queue (mcp_in_flight_ was declared and never used): callers
// piled up behind a slow archive, each holding its body. Past 64 read and unanswered, a caller
// is answered 503 with Retry-After at once, counted: from its head (its body is never waited
// for), and again once a body is read (a head let in while there was room takes no 65th place).
TEST(ServeHostile, McpsQueueIsBoundedAndSaysWhenToComeBack) {
  test::ScratchFolder dir("serve-hostile-mcp-queue");
  SilentRedis redis;
  LoopbackHttpServer upstream({});
  std::ofstream(dir.path() / "state.secret") << "a-secret-to-sign-state-with\n";  // serve needs one on Redis
  ServeProcess serve(dir.path(),
                     write_config(dir.path(), "store: {kind: redis, url: \"redis://127.0.0.1:" + std::to_string(redis.port()) +
                                                  "/0\", timeout_ms: 60000, state_secret_file: state.secret}\n"),
                     upstream.base_url());
  const std::string restore = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"restore","arguments":{"receipt":"sha256:)" +
                              std::string(64, '0') + R"("}}})";
  auto head = [&](std::vector<std::pair<std::string, std::string>> more = {}) {
    more.emplace_back("Content-Type", "application/json");
    more.emplace_back("Content-Length", std::to_string(restore.size()));
    return request_head("POST", "/mcp", serve.port(), more);
  };
  auto request = [&] { return head() + restore; };
  // Let in while there is room: serve answers 100 Continue once the head has passed.
  RawClient early(serve.port());
  early.send(head({{"Expect", "100-continue"}}));
  ASSERT_TRUE(early.read_raw_until("HTTP/1.1 100 Continue\r\n\r\n"));
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 64; ++i) {
    held.push_back(std::make_unique<RawClient>(serve.port()));
    held.back()->send(request());
  }
  ASSERT_TRUE(eventually([&] { return metrics_of(serve).find("compactor_serve_in_flight 64\n") != std::string::npos; }))
      << metrics_of(serve);
  RawClient late(serve.port());
  late.send(head());  // and never its body
  RawAnswer a = late.read(std::chrono::milliseconds(10000));
  ASSERT_TRUE(a.answered) << "the 65th caller waited for its body, or behind the others";
  EXPECT_EQ(a.status, 503) << a.body;
  EXPECT_EQ(a.headers["retry-after"], "1");
  early.send(restore);
  RawAnswer b = early.read(std::chrono::milliseconds(10000));
  ASSERT_TRUE(b.answered) << "the head let in before the 64 took a 65th place once its body came";
  EXPECT_EQ(b.status, 503) << b.body;
  EXPECT_NE(metrics_of(serve).find("compactor_serve_rejections_total{reason=\"mcp_busy\"} 2"), std::string::npos) << metrics_of(serve);
  redis.release();
  for (auto& c : held) EXPECT_EQ(c->read().status, 200);  // each told its receipt could not be read
}

// --- 6. The queue's bound, taken from the head; a given-up job leaves at once ----------------

std::string hold_pipeline() { return "pipeline:\n  - stage: misbehave\n    params: {mode: hold}\n"; }

// Whether the held stage has started (it notes "start" in the stage log when it does).
bool stage_started(const fs::path& log) {
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("start") != std::string::npos;
}

std::string body_saying(const std::string& text) {
  return R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":")" + text + R"("}]})";
}

std::string whole_request(unsigned short port, const std::string& body) {
  return request_head("POST", "/v1/messages", port, {{"Content-Type", "application/json"}, {"Content-Length", std::to_string(body.size())}}) +
         body;
}

// Which of the clients' connections has something to read first (an answer, or its end), or -1
// when none has within `patience`.
int first_readable(const std::vector<RawClient*>& clients, std::chrono::milliseconds patience) {
  std::vector<pollfd> fds;
  for (RawClient* c : clients) fds.push_back(pollfd{c->native_handle(), POLLIN, 0});
  if (::poll(fds.data(), fds.size(), static_cast<int>(patience.count())) <= 0) return -1;
  for (std::size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents != 0) return static_cast<int>(i);
  return -1;
}

// serve.max_queued was checked when a head arrived, against the jobs already queued: heads that
// arrived together all passed (each body then queued past the bound). The place is now taken
// from the head: of two heads sent together with max_queued 1, one is refused at once (529 with
// Retry-After) while the other's body is still to come, and that one is compacted.
TEST(ServeHostile, HeadsThatArriveTogetherCannotAllPassMaxQueued) {
  test::ScratchFolder dir("serve-hostile-heads");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), write_config(dir.path(), "serve: {workers: 1, max_queued: 1, body_timeout_ms: 3000}\n"), upstream.base_url());
  RawClient first(serve.port()), second(serve.port());
  const std::string body = body_saying("queued");
  const std::string head = request_head("POST", "/v1/messages", serve.port(),
                                        {{"Content-Type", "application/json"}, {"Content-Length", std::to_string(body.size())}});
  first.send(head);
  second.send(head);
  const int refused = first_readable({&first, &second}, std::chrono::milliseconds(20000));
  ASSERT_NE(refused, -1) << "neither head was refused: both passed max_queued";
  RawClient& out = refused == 0 ? first : second;
  RawClient& in = refused == 0 ? second : first;
  RawAnswer a = out.read();
  ASSERT_TRUE(a.answered) << "the refused head's connection closed without an answer (the body timed out)";
  EXPECT_EQ(a.status, 529) << a.body;
  EXPECT_EQ(a.headers["retry-after"], "1");
  in.send(body);
  RawAnswer b = in.read();
  EXPECT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(b.headers["x-compactor-status"], "unchanged");
  // The place went with the job: the next request is let in.
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body).status, 200);
  EXPECT_NE(metrics_of(serve).find("compactor_serve_rejections_total{reason=\"queue_full\"} 1"), std::string::npos) << metrics_of(serve);
}

// A job whose serve.queue_timeout_ms passed was forwarded as it came, but stayed in the queue,
// its body with it, until a worker popped it. It now leaves at once: while the one worker is
// still held, the queue is empty again as soon as the timed-out call is answered.
TEST(ServeHostile, AJobGivenUpAtItsDeadlineLeavesTheQueueAtOnce) {
  test::ScratchFolder dir("serve-hostile-deadline");
  const fs::path hold = dir.path() / "release", log = dir.path() / "stages.log";
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), write_config(dir.path(), "serve: {workers: 1, queue_timeout_ms: 300}\n", hold_pipeline()), upstream.base_url(),
                     "serve", {{"COMPACTOR_TEST_HOLD_FILE", hold.string()}, {"COMPACTOR_TEST_STAGE_LOG", log.string()}});
  RawClient held(serve.port());
  held.send(whole_request(serve.port(), body_saying("holds the worker")));
  ASSERT_TRUE(eventually([&] { return stage_started(log); }));
  Reply late = call(serve.port(), "POST", "/v1/messages", body_saying("waits past its deadline"));
  EXPECT_EQ(late.status, 200);
  EXPECT_EQ(late.headers["x-compactor-status"], "failed");
  EXPECT_NE(late.headers["x-compactor-warning"].find("serve.queue_timeout_ms"), std::string::npos) << late.headers["x-compactor-warning"];
  const std::string metrics = metrics_of(serve);
  EXPECT_NE(metrics.find("compactor_serve_pipelines_waiting 0\n"), std::string::npos) << "the given-up job is still queued:\n" << metrics;
  std::ofstream(hold) << "go";
  EXPECT_EQ(held.read().status, 200);
}

// --- 7. A client that leaves is noticed: no upstream call for nobody --------------------------

// A client that disconnected while its call waited for a pipeline or compacted was not noticed:
// the call was still made and billed (an agent that times out and retries pays twice). Now the
// queued one is withdrawn and the compacting one's result dropped: the upstream hears only the
// call whose client stayed.
TEST(ServeHostile, AClientThatLeavesWhileItsCallWaitsOrCompactsCostsNoUpstreamCall) {
  test::ScratchFolder dir("serve-hostile-gone");
  const fs::path hold = dir.path() / "release", log = dir.path() / "stages.log";
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(3, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), write_config(dir.path(), "serve: {workers: 1}\n", hold_pipeline()), upstream.base_url(), "serve",
                     {{"COMPACTOR_TEST_HOLD_FILE", hold.string()}, {"COMPACTOR_TEST_STAGE_LOG", log.string()}});
  RawClient compacting(serve.port()), queued(serve.port());
  compacting.send(whole_request(serve.port(), body_saying("left while compacting")));
  ASSERT_TRUE(eventually([&] { return stage_started(log); }));
  queued.send(whole_request(serve.port(), body_saying("left while queued")));
  ASSERT_TRUE(eventually([&] { return metrics_of(serve).find("compactor_serve_pipelines_waiting 1\n") != std::string::npos; }));
  compacting.close();
  queued.close();
  EXPECT_TRUE(eventually([&] {
    const std::string m = metrics_of(serve);
    return m.find("compactor_serve_client_gone_total{during=\"compacting\"} 1") != std::string::npos &&
           m.find("compactor_serve_client_gone_total{during=\"queued\"} 1") != std::string::npos;
  })) << metrics_of(serve);
  std::ofstream(hold) << "go";
  Reply stayed = call(serve.port(), "POST", "/v1/messages", body_saying("stayed"));
  EXPECT_EQ(stayed.status, 200);
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 1u) << "calls made for clients that had left: " << got.size() - 1;
  EXPECT_NE(got[0].body.find("stayed"), std::string::npos) << got[0].body;
}

// --- 8. A long stream is not cut at serve.request_timeout_ms ---------------------------------

// request_timeout_ms became curl's CURLOPT_TIMEOUT, which counts a whole streamed answer: long
// outputs and extended thinking were cut at 10 minutes. It now bounds the time to the answer's
// head; a stream that keeps sending lasts as long as it does (here past a 1 s limit, with a pause
// of 1.5 s under a 5 s stall limit), and a head that does not come in time is still a 502 naming
// the setting.
TEST(ServeHostile, AStreamOutlivesTheRequestTimeoutWhileItKeepsSending) {
  test::ScratchFolder dir("serve-hostile-long-stream");
  ScriptedResponse stream{200, {{"content-type", "text/event-stream"}}};
  for (int i = 0; i < 4; ++i) stream.chunks.push_back("event: ping\ndata: {\"type\": \"ping\", \"n\": " + std::to_string(i) + "}\n\n");
  stream.between_chunks = [] { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); };  // the upstream thinks
  ScriptedResponse late{200, {}, test::anthropic_reply("too late"), std::chrono::milliseconds(2500)};
  LoopbackHttpServer upstream({stream, late});
  ServeProcess serve(dir.path(), write_config(dir.path(), "serve: {request_timeout_ms: 1000, upstream_stall_ms: 5000}\n"), upstream.base_url());
  RawClient client(serve.port());
  client.send(request_head("GET", "/v1/models", serve.port()));
  RawAnswer a = client.read();
  EXPECT_EQ(a.status, 200);
  EXPECT_TRUE(a.complete) << "the stream was cut: " << a.body;
  std::string whole;
  for (const auto& c : stream.chunks) whole += c;
  EXPECT_EQ(a.body, whole);
  Reply r = call(serve.port(), "GET", "/v1/models");
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_NE(r.body.find("no answer head from the upstream within serve.request_timeout_ms (1000 ms)"), std::string::npos) << r.body;
}

// --- 11. Reloads: one config per deployment, and no old zygote held by a stream ---------------

std::string cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

// The zygote: serve's one child running `compactor serve-worker`, or -1.
pid_t zygote_of(const ServeProcess& serve) {
  for (pid_t child : test::children_of(serve.pid()))
    if (cmdline(child).find(" serve-worker ") != std::string::npos) return child;
  return -1;
}

bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ::kill(pid, 0) == 0 && stat.find(") Z ") == std::string::npos;
}

// Lets a held upstream answer go on when the test ends, however it ends (the upstream's thread
// is joined after).
struct Release {
  std::promise<void>& promise;
  ~Release() {
    try {
      promise.set_value();
    } catch (const std::future_error&) {
    }
  }
};

// Every exchange held its deployment for its whole life, so a reload's old zygote, its plugins
// loaded, lived as long as the longest stream that began before the reload (hours, for an agent
// left open). A stream needs no pipeline once its answer streams: the old zygote ends while the
// stream goes on.
TEST(ServeHostile, ALongStreamDoesNotKeepAReloadsOldZygoteAlive) {
  test::ScratchFolder dir("serve-hostile-reload-stream");
  std::promise<void> go_on;
  std::shared_future<void> released = go_on.get_future().share();
  ScriptedResponse stream{200, {{"content-type", "text/event-stream"}}};
  stream.chunks = {"event: first\ndata: {}\n\n", "event: second\ndata: {}\n\n"};
  stream.between_chunks = [released] { released.wait_for(std::chrono::seconds(60)); };
  LoopbackHttpServer upstream({stream});
  Release release{go_on};
  ServeProcess serve(dir.path(), write_config(dir.path(), ""), upstream.base_url());
  const pid_t first = zygote_of(serve);
  ASSERT_GT(first, 0);
  RawClient client(serve.port());
  client.send(request_head("GET", "/v1/models", serve.port()));
  ASSERT_TRUE(client.read_raw_until("event: first"));
  serve.signal(SIGHUP);
  ASSERT_TRUE(eventually([&] { return serve.stderr_text().find("compactor serve: reloaded") != std::string::npos; })) << serve.stderr_text();
  EXPECT_TRUE(eventually([&] { return !alive(first); })) << "the first zygote lives as long as the stream";
  go_on.set_value();
  EXPECT_TRUE(client.read_raw_until("event: second")) << "the stream did not go on";
}

// A zygote that ended was replaced by one started from the config file as it is now, beside the
// deployment's old settings: a config that a reload had refused still had its pipeline run. Now
// the replacement is a reload: the refused config's pipeline never runs (requests fail open until
// the file loads), and once it loads everything comes from it.
TEST(ServeHostile, AZygoteThatEndsIsReplacedOnlyByAConfigThatLoadsWhole) {
  test::ScratchFolder dir("serve-hostile-zygote-config");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(3, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), write_config(dir.path(), ""), upstream.base_url());
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", kBody).headers["x-compactor-status"], "unchanged");
  // A config whose pipeline would end every worker, and whose serve section a reload refuses.
  std::ofstream(dir.path() / "next.yaml") << test::read_file((dir.path() / "c.yaml").string()) << "serve:\n  upstreams: {bogus: \"http://127.0.0.1:1\"}\n";
  {
    std::string text = test::read_file((dir.path() / "next.yaml").string());
    text.replace(text.find("  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"), 61, "  - stage: misbehave\n    params: {mode: exit}\n");
    std::ofstream(dir.path() / "next.yaml") << text;
  }
  fs::rename(dir.path() / "next.yaml", dir.path() / "c.yaml");
  ASSERT_TRUE(eventually([&] { return serve.stderr_text().find("reload (the file changed) refused") != std::string::npos; })) << serve.stderr_text();
  const pid_t zygote = zygote_of(serve);
  ASSERT_GT(zygote, 0);
  ::kill(zygote, SIGKILL);
  ASSERT_TRUE(eventually([&] {
    const pid_t now = zygote_of(serve);
    return !alive(zygote) && ((now > 0 && now != zygote) || serve.stderr_text().find("ended; reloading") != std::string::npos);
  }));
  Reply r = call(serve.port(), "POST", "/v1/messages", kBody);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "failed");
  EXPECT_EQ(r.headers["x-compactor-warning"].find("misbehave"), std::string::npos) << "the refused config's pipeline ran: " << r.headers["x-compactor-warning"];
  write_config(dir.path(), "");  // fixed: the next reload takes it, and compacts again
  ASSERT_TRUE(eventually([&] { return serve.stderr_text().find("compactor serve: reloaded") != std::string::npos; })) << serve.stderr_text();
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", kBody).headers["x-compactor-status"], "unchanged");
}

// A zygote that ends (killed from outside, out of memory) is replaced by a reload of the config
// file, which has not changed here: a new zygote starts, and the requests after it compact again
// (without the replacement every request would fail open for good).
TEST(ServeHostile, AZygoteThatEndsIsReplacedFromTheConfigFile) {
  test::ScratchFolder dir("serve-hostile-zygote-replaced");
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), write_config(dir.path(), ""), upstream.base_url());
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", kBody).headers["x-compactor-status"], "unchanged");
  const pid_t zygote = zygote_of(serve);
  ASSERT_GT(zygote, 0);
  ::kill(zygote, SIGKILL);
  // The reload's line comes once its deployment is in use (its zygote starts before that).
  ASSERT_TRUE(eventually([&] { return serve.stderr_text().find("(the pipeline's zygote ended): validated and in use") != std::string::npos; }))
      << "no reload replaced the zygote killed:\n" << serve.stderr_text();
  const pid_t now = zygote_of(serve);
  EXPECT_GT(now, 0);
  EXPECT_NE(now, zygote);
  Reply r = call(serve.port(), "POST", "/v1/messages", kBody);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "unchanged") << r.headers["x-compactor-warning"];
}

}  // namespace
}  // namespace compactor
