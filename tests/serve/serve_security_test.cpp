// What an outside review of `compactor serve` found reachable that should not be, each shown
// refused: a request target that would name another host (SSRF), /mcp for a page whose name is
// made to resolve to loopback, a Host that is not this server, /mcp without its token on a
// loopback listener, guessable session ids, a client's word as a metric label, and an error body
// held whole however large. And what serve must do that it could not: listen on IPv6, hold a
// client token's tenant, and keep that token from the upstream.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <set>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ServeProcess;

fs::path fresh_dir(const std::string& name) { return test::scratch_folder_until_exit("serve-security-" + name); }

std::string write_config(const fs::path& dir, const std::string& extra) {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                                << extra;
  return "c.yaml";
}

// One request written as given (any method, any target, any Host), over IPv4 or IPv6 loopback.
Reply raw_call(const std::string& address, unsigned short port, const std::string& method, const std::string& target,
               const std::string& host, const std::string& body = "",
               std::vector<std::pair<std::string, std::string>> headers = {}) {
  headers.emplace_back("host", host);
  return test::call_at(address, port, method, target, body, headers);
}

const char* kPing = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
const char* kInit =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

// "GET @127.0.0.2:PORT/admin" appended to "http://127.0.0.1:UP" named the host 127.0.0.2 (the
// upstream's address became user info). Refused with 400; neither server hears of it.
TEST(ServeSecurity, ATargetThatIsNotAPathIsRefusedAndReachesNoHost) {
  fs::path dir = fresh_dir("ssrf");
  LoopbackHttpServer upstream({});
  LoopbackHttpServer elsewhere({{200, {}, "the admin page"}}, "127.0.0.2");
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  const std::string port = std::to_string(serve.port());
  for (const std::string& target : {"@127.0.0.2:" + std::to_string(elsewhere.port()) + "/admin",
                                   "http://127.0.0.2:" + std::to_string(elsewhere.port()) + "/admin", std::string("*")}) {
    Reply r = raw_call("127.0.0.1", serve.port(), "GET", target, "127.0.0.1:" + port);
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_EQ(json::parse(r.body).at("error").at("type"), "invalid_request_error") << r.body;
  }
  // A path that looks like an authority stays a path on the configured host.
  Reply r = raw_call("127.0.0.1", serve.port(), "GET", "//127.0.0.2:" + std::to_string(elsewhere.port()) + "/admin", "127.0.0.1:" + port);
  EXPECT_EQ(r.status, 500) << "the configured upstream has no script left, and answers 500";
  EXPECT_TRUE(elsewhere.requests().empty());
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].target, "//127.0.0.2:" + std::to_string(elsewhere.port()) + "/admin");
  fs::remove_all(dir);
}

// A page at http://127.attacker.example (its name resolved to 127.0.0.1) or any Host but this
// server's own is not let in to the archive; a loopback page on another port is.
TEST(ServeSecurity, McpAnswersOnlyThisServersHostAndLoopbackOrigins) {
  fs::path dir = fresh_dir("origin");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  const std::string self = "127.0.0.1:" + std::to_string(serve.port());
  auto status = [&](const std::string& host, const std::string& origin) {
    std::vector<std::pair<std::string, std::string>> headers = {{"content-type", "application/json"}};
    if (!origin.empty()) headers.emplace_back("origin", origin);
    return raw_call("127.0.0.1", serve.port(), "POST", "/mcp", host, kPing, headers).status;
  };
  EXPECT_EQ(status(self, ""), 200);
  EXPECT_EQ(status("localhost:" + std::to_string(serve.port()), "http://localhost:6274"), 200);
  EXPECT_EQ(status(self, "http://127.attacker.example"), 403);
  EXPECT_EQ(status(self, "http://127.0.0.1.attacker.example:" + std::to_string(serve.port())), 403);
  EXPECT_EQ(status("127.attacker.example:" + std::to_string(serve.port()), ""), 403);
  EXPECT_EQ(status("attacker.example", ""), 403);
  EXPECT_TRUE(upstream.requests().empty());
  fs::remove_all(dir);
}

// serve.mcp_token_env is honoured on loopback too (behind a tunnel or a reverse proxy, loopback
// is everyone).
TEST(ServeSecurity, TheMcpTokenIsRequiredOnALoopbackListenerWhenSet) {
  fs::path dir = fresh_dir("token");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir, write_config(dir, "serve: {mcp_token_env: MCP_TEST_TOKEN}\n"), upstream.base_url(), "serve",
                     {{"MCP_TEST_TOKEN", "s3cret-token"}});
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", kPing).status, 401);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", kPing, {{"authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", kPing, {{"authorization", "Bearer s3cret-token"}}).status, 200);
  serve.stop();
  EXPECT_EQ(serve.stderr_text().find("s3cret-token"), std::string::npos) << "the token was logged";
  fs::remove_all(dir);
}

// `count` session ids from /mcp's initialize.
std::vector<std::string> session_ids(unsigned short port, int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    Reply r = call(port, "POST", "/mcp", kInit, {{"accept", "application/json, text/event-stream"}});
    EXPECT_EQ(r.status, 200) << r.body;
    ids.push_back(r.headers["mcp-session-id"]);
  }
  return ids;
}

int bits_set(unsigned char b) { return __builtin_popcount(b); }

// Session ids must be unguessable: 128 bits (32 hex digits) from the kernel. A counter (…01, …02),
// a clock, a constant-seeded generator or a fallback to zeros would pass "distinct"; these checks
// do not let them, and a random source fails them with a probability worked out here (n = 200 ids,
// 19,900 pairs):
//  - no two share their first 48 bits: P ≤ 19,900 / 2^48 = 7.1e-11;
//  - every two differ in more than 24 of their 128 bits (a counter's neighbours differ in 1 or 2):
//    P(Binomial(128, 1/2) ≤ 24) = 2.3e-13 a pair, 4.6e-9 over all pairs;
//  - every one of the 128 bit positions is set in 50 to 150 of the 200 ids (a counter's high bits
//    never are): P(|Binomial(200, 1/2) - 100| > 50) = 2.7e-13 a position, 3.5e-11 over all;
//  - the 3,200 bytes take at least 250 of the 256 values (a counter's take a handful): P(7 given
//    values all missing) ≤ C(256, 7) × (249/256)^3,200 = 3.9e-26.
void expect_unguessable(const std::vector<std::string>& ids) {
  ASSERT_GE(ids.size(), 200u);
  std::vector<std::array<unsigned char, 16>> bytes;
  for (const std::string& id : ids) {
    ASSERT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{32}"))) << "not 32 hex digits: " << id;
    std::array<unsigned char, 16> b{};
    for (std::size_t i = 0; i < 16; ++i) b[i] = static_cast<unsigned char>(std::stoi(id.substr(2 * i, 2), nullptr, 16));
    bytes.push_back(b);
  }
  std::set<std::string> prefixes;
  for (const std::string& id : ids) prefixes.insert(id.substr(0, 12));
  EXPECT_EQ(prefixes.size(), ids.size()) << "two ids share their first 48 bits";
  int closest = 128;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (std::size_t j = i + 1; j < bytes.size(); ++j) {
      int d = 0;
      for (std::size_t k = 0; k < 16; ++k) d += bits_set(bytes[i][k] ^ bytes[j][k]);
      closest = std::min(closest, d);
    }
  EXPECT_GT(closest, 24) << "two ids differ in only " << closest << " of 128 bits";
  for (int bit = 0; bit < 128; ++bit) {
    int set = 0;
    for (const auto& b : bytes) set += (b[bit / 8] >> (bit % 8)) & 1;
    EXPECT_TRUE(set >= 50 && set <= 150) << "bit " << bit << " is set in " << set << " of " << bytes.size() << " ids";
  }
  std::set<unsigned char> values;
  for (const auto& b : bytes) values.insert(b.begin(), b.end());
  EXPECT_GE(values.size(), 250u) << "the ids' bytes take only " << values.size() << " values";
}

// Two servers (two processes, as after a restart) give ids that pass together: a generator seeded
// by a constant or by the second it started in would give the second server the first one's ids.
TEST(ServeSecurity, McpSessionIdsAreUnguessable) {
  fs::path dir = fresh_dir("ids");
  LoopbackHttpServer upstream({});
  std::vector<std::string> ids;
  for (const char* name : {"first", "second"}) {
    ServeProcess serve(dir, write_config(dir, ""), upstream.base_url(), name);
    std::vector<std::string> some = session_ids(serve.port(), 100);
    ids.insert(ids.end(), some.begin(), some.end());
  }
  expect_unguessable(ids);
  fs::remove_all(dir);
}

// Session ids come from getrandom(2): with /dev/urandom gone (a bind mount of /dev/null over it,
// in a mount namespace of serve's own) they are as unguessable, never all zeros. Where the machine
// refuses a mount namespace this is skipped, and in CI that skip is a failure unless
// COMPACTOR_CI_WITHOUT_NAMESPACES says the CI cannot make it.
TEST(ServeSecurity, McpSessionIdsAreRandomWithoutDevUrandom) {
  fs::path dir = fresh_dir("random");
  if (test::run_program("/usr/bin/unshare", {"--mount", "true"}).exit_code != 0) {
    const std::string why = "this machine refuses a mount namespace (unshare --mount), needed to hide /dev/urandom";
    if (auto failure = test::skip_is_a_failure_here(why, "COMPACTOR_CI_WITHOUT_NAMESPACES")) FAIL() << *failure;
    GTEST_SKIP() << why;
  }
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url(), "serve", {}, "127.0.0.1:0",
                     {"/usr/bin/unshare", "--mount", "sh", "-c", "mount --bind /dev/null /dev/urandom && exec \"$@\"", "sh"});
  // /dev/urandom is /dev/null for serve: reading it (16 bytes at most) gives nothing.
  std::ifstream urandom("/proc/" + std::to_string(serve.pid()) + "/root/dev/urandom", std::ios::binary);
  char sixteen[16];
  urandom.read(sixteen, sizeof sixteen);
  EXPECT_EQ(urandom.gcount(), 0) << "serve's /dev/urandom is not hidden";
  std::vector<std::string> ids = session_ids(serve.port(), 200);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), std::string(32, '0')), 0);
  expect_unguessable(ids);
  fs::remove_all(dir);
}

// A client's method is not a metric label (one label value per method sent would grow without
// bound, and carries what the client wrote into the metrics).
TEST(ServeSecurity, AClientsMethodNeverBecomesAMetricLabel) {
  fs::path dir = fresh_dir("label");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  EXPECT_EQ(raw_call("127.0.0.1", serve.port(), "XYZZYMETHOD", "/mcp", "127.0.0.1:" + std::to_string(serve.port())).status, 405);
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metrics.find("XYZZYMETHOD"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("compactor_serve_mcp_requests_total{status=\"405\"} 1"), std::string::npos) << metrics;
  fs::remove_all(dir);
}

// An error answer is held only up to a bound (1 MiB: a context refusal, which serve may retry, is
// small); a larger one goes to the client as it arrives, whole. The upstream sends the first 2 MiB
// of a 500 and the last 1 MiB only once the client holds more than 1.5 MiB of it: were the answer
// held whole, the client would have nothing until the upstream finished, and the upstream gives up
// waiting after 30 s. (This was a memory bound; the order of events says it without one.)
TEST(ServeSecurity, AnErrorAnswerOverTheHoldLimitReachesTheClientAsItArrives) {
  fs::path dir = fresh_dir("error-body");
  const std::string head(2u << 20, 'e'), tail(1u << 20, 'f');
  std::promise<void> client_has_most;
  auto has_most = client_has_most.get_future().share();
  std::atomic<bool> upstream_waited_in_vain{false};
  test::ScriptedResponse error{500, {{"content-type", "text/plain"}}, ""};
  error.chunks = {head, tail};
  error.between_chunks = [has_most, &upstream_waited_in_vain] {
    upstream_waited_in_vain = has_most.wait_for(std::chrono::seconds(30)) != std::future_status::ready;
  };
  LoopbackHttpServer upstream({error});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), serve.port()));
  const std::string request = "GET /v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string raw;
  char buf[65536];
  beast::error_code ec;
  bool told = false;
  while (!ec) {
    raw.append(buf, socket.read_some(asio::buffer(buf), ec));
    if (!told && raw.size() > (3u << 19)) {
      client_has_most.set_value();
      told = true;
    }
  }
  if (!told) client_has_most.set_value();
  EXPECT_FALSE(upstream_waited_in_vain.load()) << "the client had nothing of the error answer until the upstream finished it";
  http::response_parser<http::string_body> parser;
  parser.body_limit(16u << 20);
  parser.eager(true);
  parser.put(asio::buffer(raw), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(parser.get().result_int(), 500u);
  EXPECT_TRUE(parser.get().body() == head + tail) << parser.get().body().size() << " bytes";
  fs::remove_all(dir);
}

// serve listens on IPv6 loopback ([::1]:PORT), and says so on its first line.
TEST(ServeSecurity, ServeListensOnIpv6Loopback) {
  fs::path dir = fresh_dir("ipv6");
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("v6")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url(), "serve", {}, "[::1]:0");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  Reply r = raw_call("::1", serve.port(), "POST", "/v1/messages", "[::1]:" + std::to_string(serve.port()), body,
                     {{"content-type", "application/json"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, test::anthropic_reply("v6"));
  // /mcp on an IPv6 loopback listener takes its own Host.
  EXPECT_EQ(raw_call("::1", serve.port(), "POST", "/mcp", "[::1]:" + std::to_string(serve.port()), kPing,
                     {{"content-type", "application/json"}})
                .status,
            200);
  fs::remove_all(dir);
}

// With serve.clients, a request without a token this server issued is refused in the API's own
// shape, and the token never reaches the upstream; the client is in the metrics from the start.
TEST(ServeSecurity, ClientTokensAreRequiredAndNeverForwarded) {
  fs::path dir = fresh_dir("clients");
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("for alice")}});
  // `printf %s alice-token | sha256sum`
  const std::string alice = "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc";
  ServeProcess serve(dir, write_config(dir, "serve:\n  clients:\n    - {name: alice, token_sha256: " + alice + "}\n"),
                     upstream.base_url());
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("compactor_serve_tenant_requests_total{tenant=\"alice\"} 0"), std::string::npos) << metrics;
  Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-ant-key"}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(json::parse(r.body).at("error").at("type"), "authentication_error");
  r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-ant-key"}, {"x-compactor-token", "mallory-token"}});
  EXPECT_EQ(r.status, 401);
  r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-ant-key"}, {"x-compactor-token", "alice-token"}});
  EXPECT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].headers.count("x-compactor-token"), 0u);
  EXPECT_EQ(upstream.requests()[0].headers["x-api-key"], "sk-ant-key");
  metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("compactor_serve_tenant_requests_total{tenant=\"alice\"} 1"), std::string::npos) << metrics;
  serve.stop();
  EXPECT_EQ(serve.stderr_text().find("alice-token"), std::string::npos) << "the token was logged";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace compactor
