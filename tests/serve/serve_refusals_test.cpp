// Refusals serve makes in two places, each shown to matter on its own: a request target that is
// not a path (refused from the head, counted by reason; and refused again by the URL builder,
// whose contract holds without the server's check), and a request without a client token (refused
// from its head, before its body is read, counted by reason; and again when the body has arrived,
// for a request whose head came before a reload added clients).
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include "serve/upstream_url.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace compactor {
namespace {

using test::metric;
namespace fs = std::filesystem;
namespace json = boost::json;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ServeProcess;

std::string write_config(const fs::path& dir, const std::string& extra) {
  std::ofstream(dir / "next.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\n"
                                   << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                   << "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                                   << extra;
  // Replaced whole, as deploy tools do: a reload sees the old file or the new one.
  fs::rename(dir / "next.yaml", dir / "c.yaml");
  return "c.yaml";
}

// A connection written to by hand: what arrives is read as it comes, for a bounded time.
class RawConnection {
 public:
  explicit RawConnection(unsigned short port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ADD_FAILURE() << "cannot connect to serve";
  }
  ~RawConnection() { ::close(fd_); }
  void send(const std::string& bytes) { EXPECT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size())); }
  // Until `text` (or `other`) has arrived (true), or the connection ended or 20 s passed (false).
  bool read_until(const std::string& text, const std::string& other = "") {
    auto arrived = [&] { return received.find(text) != std::string::npos || (!other.empty() && received.find(other) != std::string::npos); };
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20); !arrived();) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      received.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  std::string received;

 private:
  int fd_;
};

// The server refuses a target that is not a path from the request's head (400, counted as
// reason="target"): neither upstream hears of it. Without that check the URL builder's own would
// still answer 400, but nothing would count it: the metric tells the two apart.
TEST(ServeRefusals, ATargetThatIsNotAPathIsRefusedFromTheHeadAndCounted) {
  fs::path dir = test::scratch_folder_until_exit("serve-refusals-target");
  LoopbackHttpServer upstream({});
  LoopbackHttpServer elsewhere({}, "127.0.0.2");
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  const std::string other = "127.0.0.2:" + std::to_string(elsewhere.port());
  for (const std::string& target : {"@" + other + "/admin", "http://" + other + "/admin", std::string("*")}) {
    Reply r = test::call_at("127.0.0.1", serve.port(), "GET", target, "", {{"host", "127.0.0.1:" + std::to_string(serve.port())}});
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_NE(r.body.find("origin form"), std::string::npos) << "not the server's own refusal: " << r.body;
  }
  EXPECT_EQ(metric(serve.port(), "compactor_serve_rejections_total{reason=\"target\"}"), 3);
  EXPECT_TRUE(upstream.requests().empty());
  EXPECT_TRUE(elsewhere.requests().empty());
}

// The URL builder refuses such a target itself, whoever calls it: curl's URL API would otherwise
// make "@127.0.0.2:8443/admin" a path on the configured host ("/@127.0.0.2:8443/admin"), which is
// not what the client asked for either.
TEST(ServeRefusals, TheUpstreamUrlIsBuiltFromAPathOnly) {
  for (const char* target : {"@127.0.0.2:8443/admin", "http://127.0.0.2/admin", "*", "127.0.0.2:80/x", ""}) {
    auto url = serve::upstream_url("http://127.0.0.1:9/base", target);
    EXPECT_FALSE(url) << target << " became " << *url;
  }
  auto url = serve::upstream_url("http://127.0.0.1:9/base/", "/v1/messages?beta=true");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(*url, "http://127.0.0.1:9/base/v1/messages?beta=true");
}

// With clients configured, a request without a token is refused from its head: a client that
// announces a 10 MB body and sends none still gets its 401 (reading the body first would wait for
// it until serve.body_timeout_ms), and the refusal is counted as reason="unauthorized".
TEST(ServeRefusals, ARequestWithoutAClientTokenIsRefusedBeforeItsBodyIsRead) {
  fs::path dir = test::scratch_folder_until_exit("serve-refusals-token");
  LoopbackHttpServer upstream({});
  // `printf %s alice-token | sha256sum`
  ServeProcess serve(dir,
                     write_config(dir, "serve:\n  body_timeout_ms: 600000\n  clients:\n    - {name: alice, token_sha256: "
                                       "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc}\n"),
                     upstream.base_url());
  RawConnection client(serve.port());
  client.send("POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: sk-ant-k\r\n"
              "content-length: 10000000\r\n\r\n");
  ASSERT_TRUE(client.read_until("authentication_error")) << "no refusal before the body: " << client.received;
  EXPECT_EQ(client.received.rfind("HTTP/1.1 401", 0), 0u) << client.received;
  EXPECT_EQ(metric(serve.port(), "compactor_serve_rejections_total{reason=\"unauthorized\"}"), 1);
  EXPECT_TRUE(upstream.requests().empty());
}

// A request whose head was screened before a reload added clients, and whose body came after, is
// refused when its body has arrived: the server identifies the tenant again with the clients now
// configured (the head's check alone would let it through as the key's tenant).
TEST(ServeRefusals, ARequestWhoseHeadCameBeforeAReloadAddedClientsIsRefused) {
  fs::path dir = test::scratch_folder_until_exit("serve-refusals-reload");
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("should not be asked")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  RawConnection client(serve.port());
  // "100 Continue" comes once the head is screened (no clients: let in, as the key's tenant).
  client.send("POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: sk-ant-k\r\n"
              "expect: 100-continue\r\ncontent-length: " + std::to_string(body.size()) + "\r\n\r\n");
  ASSERT_TRUE(client.read_until("HTTP/1.1 100 Continue\r\n\r\n")) << client.received;
  write_config(dir, "serve:\n  clients:\n    - {name: alice, token_sha256: "
                    "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc}\n");
  serve.signal(SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 2000 && !reloaded; ++i) {
    reloaded = serve.stderr_text().find("compactor serve: reloaded") != std::string::npos;
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(reloaded) << serve.stderr_text();
  client.send(body);
  ASSERT_TRUE(client.read_until("authentication_error", "should not be asked")) << client.received;
  EXPECT_NE(client.received.find("HTTP/1.1 401"), std::string::npos) << client.received;
  EXPECT_NE(client.received.find("authentication_error"), std::string::npos) << client.received;
  EXPECT_TRUE(upstream.requests().empty()) << "forwarded without a token after clients were configured";
}

}  // namespace
}  // namespace compactor
