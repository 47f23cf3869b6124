// Tenants by API key (no serve.clients): each key is its own tenant, named `key-` and the first 16
// hex digits of the key's SHA-256 (worked out here with sha256sum, not by serve's code), and
// neither key continues, restores or searches the other's conversations, whether by sending the
// other's very history (the same state keys) or by receipt through /mcp and the command line. What
// each saved is counted exactly: the chars the client sent less the chars that went on.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"
#include "support/tool_history.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace compactor {
namespace {

using test::metric;
namespace fs = std::filesystem;
namespace json = boost::json;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;

// `printf %s sk-ant-alice-key | sha256sum` and bob's, their first 16 hex digits.
constexpr const char* kAlice = "key-c094271d52fa91ba";
constexpr const char* kBob = "key-631915c105c6f2d0";

// The chars of a body's messages: each message's JSON as it was written (Boost.JSON writes the
// compact ASCII the test sends, and the stages' messages, back as they were).
std::size_t message_chars(const std::string& body) {
  std::size_t chars = 0;
  const json::value parsed = json::parse(body);
  for (const auto& m : parsed.at("messages").as_array()) chars += test::code_points(json::serialize(m));
  return chars;
}

json::value restore(unsigned short port, const std::string& key, const std::string& receipt) {
  const json::object message{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                             {"params", json::object{{"name", "restore"}, {"arguments", json::object{{"receipt", receipt}}}}}};
  Reply r = call(port, "POST", "/mcp", json::serialize(message), {{"x-api-key", key}, {"mcp-protocol-version", "2025-06-18"}});
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body);
}

bool is_error(const json::value& answer) {
  const auto* e = answer.at("result").as_object().if_contains("isError");
  return e != nullptr && e->as_bool();
}

TEST(ServeKeyTenants, TwoApiKeysShareNoStateAndNoArchive) {
  test::ScratchFolder dir("serve-key-tenants");
  const fs::path archive = dir / "archive";
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 20000, target: 15000}\n"
                                << "archive: {dir: " << archive.string() << ", restore_via: mcp}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2, min_chars: 500}\n";
  // 12 Read exchanges of 2,000-char results: 21 messages (about 21,500 chars) cross the limit.
  const std::vector<std::string> history = test::tool_history(12, [](std::size_t) { return 2000; });
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(4, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), "c.yaml", upstream.base_url());
  const std::string first = test::messages_request(history, 21, "claude-sonnet-4-5", "You are a coding agent.");
  const std::string second = test::messages_request(history, 25, "claude-sonnet-4-5", "You are a coding agent.");

  // Alice: compacted, then continued from her state (the second call, under the limit with the
  // first's compaction, changes nothing itself: unchanged, and it forwards that compaction).
  for (const auto& [body, status] : {std::pair{first, "compacted"}, std::pair{second, "unchanged"}}) {
    Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-ant-alice-key"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers["x-compactor-status"], status);
  }
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"hit\"}"), 1) << metrics;
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 2u);
  // Saved: what the client sent less what went on (the system prompt is in both, and cancels). A
  // key's first call counts as "unverified" (no upstream answer had vouched for the key yet), the
  // calls after its first 2xx as the key's tenant.
  const double saved_first = static_cast<double>(message_chars(first) - message_chars(got[0].body));
  const double saved = static_cast<double>(message_chars(second) - message_chars(got[1].body));
  EXPECT_GT(saved, 0);
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_size_saved_total{tenant=\"" + std::string(kAlice) + "\",unit=\"chars\"}"), saved) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_size_saved_total{tenant=\"unverified\",unit=\"chars\"}"), saved_first) << metrics;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(got[1].body, m, std::regex("sha256:[0-9a-f]{64}"))) << "alice's call archived nothing";
  const std::string receipt = m.str();

  // Bob has a conversation of his own (compacted, archived in his tenant).
  const std::vector<std::string> his = test::tool_history(12, [](std::size_t) { return 2000; }, 'b');
  Reply r = call(serve.port(), "POST", "/v1/messages", test::messages_request(his, 21, "claude-sonnet-4-5", "You are a coding agent."),
                 {{"x-api-key", "sk-ant-bob-key"}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted");

  // Her receipt: hers through /mcp (the key names the tenant), not bob's; on the command line only
  // under her tenant's name.
  EXPECT_FALSE(is_error(restore(serve.port(), "sk-ant-alice-key", receipt)));
  EXPECT_TRUE(is_error(restore(serve.port(), "sk-ant-bob-key", receipt)));
  EXPECT_EQ(test::run_cli({"restore", receipt, "--archive", archive.string(), "--tenant", kAlice}).exit_code, 0);
  EXPECT_EQ(test::run_cli({"restore", receipt, "--archive", archive.string(), "--tenant", kBob}).exit_code, 2);

  // Bob sends Alice's very history: the same state keys, none of her state (a full run: it
  // archives what it removes in his tenant, as any first call does).
  r = call(serve.port(), "POST", "/v1/messages", second, {{"x-api-key", "sk-ant-bob-key"}});
  ASSERT_EQ(r.status, 200);
  metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"hit\"}"), 1) << "bob continued alice's conversation";
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"miss\"}"), 3) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"" + std::string(kAlice) + "\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"" + std::string(kBob) + "\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"unverified\"}"), 2) << metrics;  // each key's first
}

}  // namespace
}  // namespace compactor
