// What serve keeps, and for whom: with no clients configured, an API key is a tenant only once the
// upstream has answered one of its calls with a 2xx. Until then what its calls store (a first call
// that must be compacted still archives before it removes) is in a small area shared by every such
// key, bounded in bytes and dropped after its time, and the key takes no tenant label; its first
// 2xx makes it the tenant's, whose receipts restore. Each tenant's storage is bounded and counted,
// and a call over a bound goes upstream as it came. On the folder store and on Redis.
#include "support/loopback_http_server.hpp"
#include "support/redis_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include "compactor/archive.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <utime.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

namespace compactor {
namespace {

using test::metric;
namespace fs = std::filesystem;
using test::call;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;

constexpr const char* kSession = "cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json";

// serve's tenant of an API key: key- and 16 hex digits of its SHA-256.
std::string tenant_of_key(const std::string& key) { return "key-" + receipt_of(key).substr(7, 16); }

std::string request_body(const Conversation& c, std::size_t count) {
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a coding agent.","messages":[)";
  for (std::size_t i = 0; i < count; ++i) body += (i ? "," : "") + std::string(c[i].raw());
  return body + "]}";
}

// A config whose first call of the bundled session is compacted by micro (which archives).
std::string config(const fs::path& dir, const std::string& extra_serve, const std::string& store = "") {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\n"
                                << "archive: {dir: " << (dir / "archive").string() << ", restore_via: mcp}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n"
                                << store << "serve: {" << extra_serve << "}\n";
  return "c.yaml";
}

// Waits (up to 10 s) for `series` to reach `value` in serve's metrics: what happens after an
// answer (a vouch) is seen by its count, not by a sleep.
bool wait_for_metric(unsigned short port, const std::string& series, double value) {
  for (int i = 0; i < 1000; ++i) {
    if (metric(call(port, "GET", "/metrics").body, series) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::int64_t bytes_under(const fs::path& folder) {
  std::int64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(folder, ec))
    if (e.is_regular_file() && e.path().filename() != "usage") total += static_cast<std::int64_t>(e.file_size());
  return total;
}

std::vector<std::string> folders_in(const fs::path& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> receipts_in(const std::string& body) {
  std::vector<std::string> out;
  static const std::regex receipt("sha256:[0-9a-f]{64}");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), receipt); it != std::sregex_iterator(); ++it) out.push_back(it->str());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ScriptedResponse refused_key() {
  return ScriptedResponse{401, {}, R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})"};
}

TEST(ServeStoreBounds, StrangersKeysFillNoTenantAndTheirFirst2xxKeepsTheirReceipts) {
  fs::path dir = test::scratch_folder_until_exit("bounds-strangers");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string body = request_body(session, session.size() - 2);
  std::vector<ScriptedResponse> script{refused_key(), refused_key(), refused_key()};
  script.insert(script.end(), 2, ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  script.push_back(refused_key());
  LoopbackHttpServer upstream(script);
  ServeProcess serve(dir, config(dir, "unverified_max_bytes: 4000000"), upstream.base_url());
  const fs::path archive = dir / "archive";

  // Three keys the upstream refuses: their calls archived (each was compacted) in the unverified
  // area only, and none is a tenant.
  for (const char* key : {"sk-stranger-1", "sk-stranger-2", "sk-stranger-3"}) {
    Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", key}});
    EXPECT_EQ(r.status, 401) << r.body;
  }
  ASSERT_EQ(upstream.requests().size(), 3u);
  EXPECT_FALSE(receipts_in(upstream.requests()[0].body).empty()) << "the strangers' calls were not compacted: this test proves nothing";
  EXPECT_FALSE(fs::exists(archive / "tenants")) << folders_in(archive / "tenants").size() << " tenant folders";
  EXPECT_EQ(folders_in(archive / "unverified"),
            (std::vector<std::string>{tenant_of_key("sk-stranger-1"), tenant_of_key("sk-stranger-2"),
                                      tenant_of_key("sk-stranger-3")}));
  EXPECT_LE(bytes_under(archive / "unverified"), 4000000);
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"unverified\"}"), 3) << metrics;
  EXPECT_EQ(metrics.find("tenant=\"key-"), std::string::npos) << metrics;

  // A key the upstream answers: its first call's receipts are its own once that answer came.
  const std::string good = tenant_of_key("sk-good");
  Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-good"}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(wait_for_metric(serve.port(), "compactor_serve_vouched_total{result=\"ok\"}", 1));
  EXPECT_EQ(folders_in(archive / "tenants"), std::vector<std::string>{good});
  EXPECT_FALSE(fs::exists(archive / "unverified" / good));
  const std::vector<std::string> receipts = receipts_in(upstream.requests()[3].body);
  ASSERT_FALSE(receipts.empty());
  for (const std::string& receipt : receipts) {
    test::CommandResult restored = test::run_cli({"restore", receipt, "--archive", archive.string(), "--tenant", good});
    EXPECT_EQ(restored.exit_code, 0) << restored.err;
  }
  // Its next call continues its conversation, and names it in the metrics.
  r = call(serve.port(), "POST", "/v1/messages", request_body(session, session.size()), {{"x-api-key", "sk-good"}});
  ASSERT_EQ(r.status, 200) << r.body;
  metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"hit\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"" + good + "\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_store_bytes{tenant=\"" + good + "\"}"),
            static_cast<double>(bytes_under(archive / "tenants" / good)))
      << metrics;

  // An hour later (the strangers' folders made old), the next stranger's call drops them.
  const auto hour_ago = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() - std::chrono::hours(2));
  for (const std::string& stranger : folders_in(archive / "unverified")) {
    const utimbuf old{hour_ago, hour_ago};
    ::utime((archive / "unverified" / stranger / "usage").c_str(), &old);
  }
  r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-stranger-4"}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(folders_in(archive / "unverified"), std::vector<std::string>{tenant_of_key("sk-stranger-4")});
}

// At a bound the call goes upstream as it came, whatever serve.on_failure says, and the refusal is
// counted: the unverified area's for a key no 2xx vouched for, a tenant's own for a client.
TEST(ServeStoreBounds, ACallOverABoundIsForwardedAsItCameAndCounted) {
  fs::path dir = test::scratch_folder_until_exit("bounds-full");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string body = request_body(session, session.size() - 2);
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir,
                     config(dir, std::string("on_failure: reject, unverified_max_bytes: 1000, tenant_max_bytes: 50000, ") +
                                     "clients: [{name: alice, token_sha256: \"" + receipt_of("alice-token").substr(7) + "\"}]"),
                     upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-compactor-token", "alice-token"}, {"x-api-key", "sk-a"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-compactor-status"], "failed");
  EXPECT_NE(r.headers["x-compactor-warning"].find("serve.tenant_max_bytes (50000)"), std::string::npos) << r.headers["x-compactor-warning"];
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].body, body);  // as it came
  EXPECT_EQ(bytes_under(dir / "archive" / "tenants" / "alice"), 0);  // no pack, and no state for a call that failed
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_store_full_total{bound=\"tenant\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_store_errors_total{op=\"blobs_put\"}"), 0) << metrics;  // a bound, not a failure
}

TEST(ServeStoreBounds, AKeyOverTheUnverifiedAreaIsForwardedAsItCame) {
  fs::path dir = test::scratch_folder_until_exit("bounds-area-full");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string body = request_body(session, session.size() - 2);
  LoopbackHttpServer upstream({refused_key()});
  ServeProcess serve(dir, config(dir, "on_failure: reject, unverified_max_bytes: 1000"), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-stranger"}});
  EXPECT_EQ(r.status, 401);  // the upstream's answer: serve refused nothing
  EXPECT_EQ(r.headers["x-compactor-status"], "failed");
  EXPECT_NE(r.headers["x-compactor-warning"].find("serve.unverified_max_bytes (1000)"), std::string::npos) << r.headers["x-compactor-warning"];
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].body, body);
  EXPECT_LE(bytes_under(dir / "archive" / "unverified"), 1000);
  EXPECT_FALSE(fs::exists(dir / "archive" / "tenants"));
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_store_full_total{bound=\"unverified\"}"), 1) << metrics;
}

// On Redis the same: a stranger's keys all expire (none is its tenant's for good, no gc index
// names it), counted in the shared area; the first 2xx makes a key's blobs its own.
TEST(ServeStoreBounds, OnRedisAStrangersKeysExpireAndAVouchedKeysBlobsStay) {
  test::RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  fs::path dir = test::scratch_folder_until_exit("bounds-redis");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string body = request_body(session, session.size() - 2);
  LoopbackHttpServer upstream({refused_key(), ScriptedResponse{200, {}, test::anthropic_reply("ok")}});
  const std::string yaml = config(dir, "unverified_ttl_s: 600", redis.store_yaml());
  ServeProcess serve(dir, yaml, upstream.base_url());
  const std::string stranger = "{compactor:" + tenant_of_key("sk-stranger") + "}", good = "{compactor:" + tenant_of_key("sk-good") + "}";

  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-stranger"}}).status, 401);
  const std::vector<std::string> blobs = receipts_in(upstream.requests().at(0).body);
  ASSERT_FALSE(blobs.empty()) << "the stranger's call was not compacted: this test proves nothing";
  for (const std::string& receipt : blobs) {
    const long ttl = std::stol(redis.cli({"TTL", stranger + ":b:" + receipt.substr(7)}));
    EXPECT_GT(ttl, 0) << receipt;  // it expires
    EXPECT_LE(ttl, 600) << receipt;
  }
  EXPECT_EQ(redis.cli({"EXISTS", stranger + ":known", stranger + ":blobs", stranger + ":bytes"}), "0\n");
  const long held = std::stol(redis.cli({"GET", "{compactor}:unverified:total"}));
  EXPECT_GT(held, 0);
  EXPECT_LE(held, 64 << 20);
  test::CommandResult gc = test::run_cli({"archive", "gc", "--config", (dir / yaml).string(), "--every-tenant", "--keep-days", "1"});
  EXPECT_EQ(gc.out.find("key-"), std::string::npos) << gc.out;  // no tenant to collect

  ASSERT_EQ(call(serve.port(), "POST", "/v1/messages", body, {{"x-api-key", "sk-good"}}).status, 200);
  ASSERT_TRUE(wait_for_metric(serve.port(), "compactor_serve_vouched_total{result=\"ok\"}", 1));
  const std::vector<std::string> kept = receipts_in(upstream.requests().at(1).body);
  ASSERT_FALSE(kept.empty());
  for (const std::string& receipt : kept) {
    EXPECT_EQ(redis.cli({"TTL", good + ":b:" + receipt.substr(7)}), "-1\n") << receipt;  // its own for good
    test::CommandResult restored =
        test::run_cli({"restore", receipt, "--config", (dir / yaml).string(), "--tenant", tenant_of_key("sk-good")});
    EXPECT_EQ(restored.exit_code, 0) << restored.err;
  }
  EXPECT_EQ(redis.cli({"EXISTS", good + ":known"}), "1\n");
  EXPECT_EQ(std::stol(redis.cli({"ZCARD", good + ":blobs"})), static_cast<long>(kept.size()));
  EXPECT_EQ(redis.cli({"HEXISTS", "{compactor}:unverified:bytes", tenant_of_key("sk-good")}), "0\n");
}

}  // namespace
}  // namespace compactor
