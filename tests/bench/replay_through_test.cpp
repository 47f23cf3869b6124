// compactor replay --through: a recorded session sent call by call to a real `compactor serve`
// (started by the test on a free loopback port) whose upstream is a loopback stand-in that answers
// anything. The session is the bench fixture notes.json through tests/bench/configs/micro.yaml,
// whose three calls bench_test.cpp works out by hand: call 1 (48 chars) is within the 2,000-char
// limit; call 2 (5,260) is over and micro can do nothing (one result, keep_recent 1); call 3
// (5,503) is over and micro masks the failed Read's result.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace compactor::test {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

const std::string kBench = COMPACTOR_BENCH_DIR;  // tests/bench
const std::string kNotes = kBench + "/fixture/notes.json";

std::string grouped(std::size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The blocks of a message that carry cache_control, as "m.b" (message m, block b).
std::vector<std::string> breakpoints(const json::value& body) {
  std::vector<std::string> out;
  const json::array& messages = body.at("messages").as_array();
  for (std::size_t m = 0; m < messages.size(); ++m)
    if (const auto* content = messages[m].as_object().if_contains("content"); content != nullptr && content->is_array())
      for (std::size_t b = 0; b < content->as_array().size(); ++b)
        if (content->as_array()[b].as_object().contains("cache_control")) out.push_back(std::to_string(m) + "." + std::to_string(b));
  return out;
}

TEST(ReplayThrough, SendsEachCallAsAnAgentWouldAndPrintsWhatServeDidWithIt) {
  ScratchFolder folder("replay-through");
  LoopbackHttpServer upstream({{200, {}, anthropic_reply("a")}, {200, {}, anthropic_reply("b")}, {200, {}, anthropic_reply("c")}}, "127.0.0.1",
                              true);
  std::ofstream(folder.path() / "micro.yaml") << read_file(kBench + "/configs/micro.yaml") << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n";
  ServeProcess serve(folder.path(), "micro.yaml", upstream.base_url());
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port());
  auto r = run_cli({"replay", "--through", url, kNotes, "--header", "x-api-key: sk-ant-test"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto got = upstream.requests();
  ASSERT_EQ(got.size(), 3u);  // one request per call, no more

  // What the agent sent: the whole history up to each answer, the original answers played back,
  // the breakpoint on the newest message's last block only; model and max_tokens added.
  const json::value original = json::parse(read_file(kNotes));
  const json::value first = json::parse(got[0].body), second = json::parse(got[1].body);
  EXPECT_EQ(first.at("messages").as_array().size(), 1u);
  EXPECT_EQ(breakpoints(first), (std::vector<std::string>{"0.0"}));  // the prompt, a string, became one text block
  EXPECT_EQ(first.at("model"), "claude-sonnet-4-5");
  EXPECT_EQ(first.at("max_tokens"), 1024);
  ASSERT_EQ(second.at("messages").as_array().size(), 3u);
  EXPECT_EQ(second.at("messages").at(1), original.at(1));  // the original answer, not the stand-in's "a"
  EXPECT_EQ(breakpoints(second), (std::vector<std::string>{"2.0"}));
  EXPECT_EQ(got[0].headers.at("x-api-key"), "sk-ant-test");

  // What serve did, call by call, from its headers; the bytes are what the agent sent (calls 1
  // and 2 went upstream unchanged, so the stand-in received the same bytes).
  EXPECT_NE(r.out.find("call 1/3: 1 messages, " + grouped(got[0].body.size()) + " bytes: 200, x-compactor-status: unchanged, "
                       "x-compactor-size-before: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("call 2/3: 3 messages, " + grouped(got[1].body.size()) + " bytes: 200, x-compactor-warning: still over budget: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", x-compactor-status: over_budget, x-compactor-size-before: 5260, x-compactor-size-after: 5260, "
                       "x-compactor-size-unit: chars\ncall 3/3: 5 messages, "),
            std::string::npos)
      << r.out;
  // The compacted call says what it saved and the receipt it wrote.
  EXPECT_NE(r.out.find(" bytes: 200, x-compactor-status: compacted, x-compactor-size-before: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", x-compactor-size-unit: chars, x-compactor-receipts: sha256:"), std::string::npos) << r.out;
  EXPECT_LT(got[2].body.size(), got[1].body.size());  // compacted: the failed Read's 5,000 chars masked
  EXPECT_NE(r.out.find("replayed 3 calls of " + kNotes + " through " + url +
                       ": 3 answered 2xx, 0 with an error; x-compactor-status: compacted 1, over_budget 1, unchanged 1; "),
            std::string::npos)
      << r.out;
}

// A port nothing listens on: bound, then closed.
unsigned short free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ReplayThrough, MisuseAndAnUnreachableServeAreSaidWithTheirExitCodes) {
  auto no_url = run_cli({"replay", kNotes});
  EXPECT_EQ(no_url.exit_code, 2);
  EXPECT_NE(no_url.err.find("--through URL is required"), std::string::npos) << no_url.err;
  auto bad_url = run_cli({"replay", "--through", "127.0.0.1:1", kNotes});
  EXPECT_EQ(bad_url.exit_code, 2);
  EXPECT_NE(bad_url.err.find("--through takes an http:// or https:// URL, got \"127.0.0.1:1\""), std::string::npos) << bad_url.err;
  auto broken = run_cli({"replay", "--through", "http://127.0.0.1:1", kBench + "/fixture/broken.json"});
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("compactor replay: " + kBench + "/fixture/broken.json"), std::string::npos) << broken.err;
  const std::string url = "http://127.0.0.1:" + std::to_string(free_port());
  auto away = run_cli({"replay", "--through", url, kNotes});
  EXPECT_EQ(away.exit_code, 3);
  EXPECT_NE(away.err.find("compactor replay: call 1 of 3: " + url + ": "), std::string::npos) << away.err;
  EXPECT_NE(away.out.find("replayed 0 calls of "), std::string::npos) << away.out;
}

}  // namespace
}  // namespace compactor::test
