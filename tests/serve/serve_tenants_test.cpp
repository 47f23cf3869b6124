// Two tenants through one serve (clients alice and bob, each with a token serve issued): neither
// can restore, search or continue the other's conversations (by receipt through /mcp and the
// command line, by sending the other's very history, which names the same state keys), and both
// are in /metrics from the start and after.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include "compactor/archive.hpp"
#include "compactor/build_fingerprint.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <chrono>
#include <fstream>
#include <regex>
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

// `printf %s alice-token | sha256sum`, and bob's.
constexpr const char* kAlice = "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc";
constexpr const char* kBob = "97dd3707015dcf069cf73022ed7173b1165db6eff24b441cb57fd069a8c4e525";

std::string request_body(const Conversation& c, std::size_t count) {
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a coding agent.","messages":[)";
  for (std::size_t i = 0; i < count; ++i) body += (i ? "," : "") + std::string(c[i].raw());
  return body + "]}";
}

json::value mcp_tool(unsigned short port, const std::string& token, const std::string& tool, json::object arguments) {
  const json::object message{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                             {"params", json::object{{"name", tool}, {"arguments", std::move(arguments)}}}};
  Reply r = call(port, "POST", "/mcp", json::serialize(message), {{"authorization", "Bearer " + token}, {"mcp-protocol-version", "2025-06-18"}});
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body);
}

std::string text_of(const json::value& answer) {
  std::string out;
  for (const auto& c : answer.at("result").at("content").as_array())
    if (c.at("type") == "text") out += std::string(c.at("text").as_string());
  return out;
}

bool is_error(const json::value& answer) {
  const auto* e = answer.at("result").as_object().if_contains("isError");
  return e != nullptr && e->as_bool();
}

TEST(ServeTenants, NeitherTenantReachesTheOthersArchiveOrConversations) {
  fs::path dir = test::scratch_folder_until_exit("serve-tenants");
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\n"
                                << "archive: {dir: " << (dir / "archive").string() << ", restore_via: mcp}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n"
                                << "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 1000}\n"
                                << "serve:\n  clients:\n    - {name: alice, token_sha256: \"" << kAlice << "\"}\n"
                                << "    - {name: bob, token_sha256: \"" << kBob << "\"}\n";
  Conversation session = test::load_or_die(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"));
  std::vector<test::ScriptedResponse> script(4, test::ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  LoopbackHttpServer upstream(script);
  ServeProcess serve(dir, "c.yaml", upstream.base_url());

  // Both in the metrics from the start.
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"alice\"}"), 0) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"bob\"}"), 0) << metrics;

  // Alice's conversation, two calls: compacted, then continued from her stored state.
  const std::string first = request_body(session, session.size() - 2), second = request_body(session, session.size());
  for (const std::string& body : {first, second}) {
    Reply r = call(serve.port(), "POST", "/v1/messages", body, {{"x-compactor-token", "alice-token"}, {"x-api-key", "sk-ant-a"}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  metrics = call(serve.port(), "GET", "/metrics").body;
  const double hits = metric(metrics, "compactor_serve_state_total{result=\"hit\"}");
  EXPECT_EQ(hits, 1) << metrics;
  // Each call saved what the client sent less what went on: the continued call as much as the
  // first (it was counted against the history it continued, and saved nothing, before).
  const double received = metric(metrics, "compactor_serve_size_in_total{unit=\"chars\"}");
  const double forwarded = metric(metrics, "compactor_serve_size_out_total{unit=\"chars\"}");
  const double whole = static_cast<double>(first.size() + second.size());
  EXPECT_GT(received, 0.8 * whole) << received << " chars received of two bodies of " << whole << " bytes";
  EXPECT_LT(forwarded, 0.3 * received) << metrics;
  std::smatch m;
  const std::string sent = upstream.requests().at(1).body;
  ASSERT_TRUE(std::regex_search(sent, m, std::regex("sha256:[0-9a-f]{64}"))) << "alice's call archived nothing";
  const std::string receipt = m.str();

  // Bob sends Alice's very history: the same state keys, none of her state.
  Reply r = call(serve.port(), "POST", "/v1/messages", second, {{"x-compactor-token", "bob-token"}, {"x-api-key", "sk-ant-b"}});
  ASSERT_EQ(r.status, 200);
  metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"hit\"}"), hits) << "bob continued alice's conversation";

  // By receipt, through /mcp: alice's own, and nothing of hers for bob.
  json::value mine = mcp_tool(serve.port(), "alice-token", "restore", {{"receipt", receipt}});
  EXPECT_FALSE(is_error(mine)) << text_of(mine);
  json::value theirs = mcp_tool(serve.port(), "bob-token", "restore", {{"receipt", receipt}});
  EXPECT_TRUE(is_error(theirs)) << text_of(theirs);
  EXPECT_EQ(text_of(theirs).find(text_of(mine).substr(0, 40)), std::string::npos);
  // The error names no server path: a client learns where serve keeps archives from nobody.
  EXPECT_EQ(text_of(theirs).find(dir.string()), std::string::npos) << text_of(theirs);
  json::value search = mcp_tool(serve.port(), "bob-token", "search", {{"receipt", receipt}, {"pattern", "a"}});
  EXPECT_TRUE(is_error(search)) << text_of(search);

  // By receipt, on the command line: only in alice's namespace.
  const std::string archive = (dir / "archive").string();
  EXPECT_EQ(test::run_cli({"restore", receipt, "--archive", archive, "--tenant", "alice"}).exit_code, 0);
  EXPECT_EQ(test::run_cli({"restore", receipt, "--archive", archive, "--tenant", "bob"}).exit_code, 2);
  test::CommandResult untenanted = test::run_cli({"restore", receipt, "--archive", archive});
  EXPECT_EQ(untenanted.exit_code, 2);
  EXPECT_NE(untenanted.err.find("this archive has tenants"), std::string::npos) << untenanted.err;
  EXPECT_NE(untenanted.err.find("--tenant T"), std::string::npos) << untenanted.err;
  // A tenant that archived nothing yet: gc has nothing to collect, and says so (a timer per
  // tenant runs before a developer first uses serve).
  test::CommandResult idle = test::run_cli({"archive", "gc", "--archive", archive, "--tenant", "carol", "--keep-days", "30"});
  EXPECT_EQ(idle.exit_code, 0) << idle.err;
  EXPECT_NE(idle.out.find("nothing archived for tenant carol yet, removed 0"), std::string::npos) << idle.out;

  metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"alice\"}"), 2) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"bob\"}"), 1) << metrics;
  EXPECT_GT(metric(metrics, "compactor_serve_tenant_size_saved_total{tenant=\"alice\",unit=\"chars\"}"), 0) << metrics;

  // Every line of a call's log names its tenant: an operator greps one developer's calls.
  r = call(serve.port(), "POST", "/v1/messages", "{\"messages\": 1}", {{"x-compactor-token", "bob-token"}, {"x-api-key", "sk-ant-b"}});
  EXPECT_EQ(r.status, 200);
  // (Logged as the answer goes: read once its line is there, or after 5 s.)
  std::string log = serve.stderr_text();
  for (int i = 0; i < 500 && log.find("tenant=bob messages=0") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    log = serve.stderr_text();
  }
  EXPECT_NE(log.find("POST /v1/messages: tenant=bob: input refused, forwarded unchanged"), std::string::npos) << log;
  EXPECT_NE(log.find("serve: tenant=alice: micro: replaced"), std::string::npos) << log;
  EXPECT_NE(log.find("serve: tenant=alice: summarize: summarized the first "), std::string::npos) << log;
  EXPECT_EQ(log.find("serve: micro:"), std::string::npos) << log;
  EXPECT_NE(log.find("serve: POST /mcp 200: tenant=alice"), std::string::npos) << log;
  EXPECT_NE(log.find("serve: POST /mcp 200: tenant=bob"), std::string::npos) << log;
}

constexpr const char* kPing = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";

std::string plain_config(const fs::path& dir, const std::string& name, const std::string& serve) {
  std::ofstream(dir / name) << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\n"
                            << "archive: {dir: " << (dir / "archive").string() << "}\npipeline: []\n" << serve;
  return name;
}

// A proxy on this machine makes every caller look local, and sets whatever Host it likes: a
// request that says it came through one is remote, and /mcp answers it only with a credential.
TEST(ServeTenants, WhatCameThroughAProxyIsRemoteAndNeedsACredential) {
  fs::path dir = test::scratch_folder_until_exit("serve-fronted");
  LoopbackHttpServer upstream({});
  {
    ServeProcess serve(dir, plain_config(dir, "open.yaml", ""), upstream.base_url());
    EXPECT_EQ(call(serve.port(), "POST", "/mcp", kPing).status, 200);  // local, addressed to this server
    for (const char* header : {"x-forwarded-for", "forwarded", "via", "x-real-ip", "x-forwarded-host"}) {
      Reply r = call(serve.port(), "POST", "/mcp", kPing, {{header, "203.0.113.7"}});
      EXPECT_EQ(r.status, 403) << header;
      EXPECT_NE(r.body.find(std::string("came through a proxy (") + header + ")"), std::string::npos) << r.body;
      EXPECT_NE(r.body.find("serve.clients"), std::string::npos) << r.body;
    }
  }
  // serve.fronted without a credential does not start, and says what to add.
  test::CommandResult v = test::run_cli({"validate", "--config", (dir / plain_config(dir, "bare.yaml", "serve: {fronted: true}\n")).string()});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("bare.yaml:5:18: serve.fronted: serve behind a front needs a credential"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("`compactor serve-token --name NAME`"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("`mcp_token_env: COMPACTOR_MCP_TOKEN`"), std::string::npos) << v.err;
  // Fronted with a token: every request needs it, and none is judged by its Host.
  ServeProcess serve(dir, plain_config(dir, "fronted.yaml", "serve: {fronted: true, mcp_token_env: MCP_TEST_TOKEN}\n"),
                     upstream.base_url(), "fronted", {{"MCP_TEST_TOKEN", "s3cret"}});
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", kPing).status, 401);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", kPing, {{"host", "compactor.example.com"}, {"authorization", "Bearer s3cret"}}).status, 200);
}

// /metrics names every client and key hash: a remote scraper gets it only with the token of
// serve.metrics_token_env; /healthz stays open and says nothing of anyone.
TEST(ServeTenants, MetricsNameTenantsOnlyToAScraperWithTheToken) {
  fs::path dir = test::scratch_folder_until_exit("serve-metrics-token");
  LoopbackHttpServer upstream({});
  const std::string alice = std::string("serve: {clients: [{name: alice, token_sha256: \"") + kAlice + "\"}]";
  {
    ServeProcess serve(dir, plain_config(dir, "local.yaml", alice + "}\n"), upstream.base_url());
    Reply open = call(serve.port(), "GET", "/metrics");
    EXPECT_EQ(open.status, 200);  // on loopback, asked directly
    // What runs: the version `compactor --version` prints, the plugin API and the fingerprint.
    const std::string version = test::run_cli({"--version"}).out;
    const std::string build = "compactor_build_info{version=\"" + version.substr(10, version.find('\n') - 10) + "\",api=\"" +
                              std::to_string(kApiVersion) + "\",fingerprint=\"" + kBuildFingerprint + "\"} 1\n";
    EXPECT_NE(open.body.find(build), std::string::npos) << build << open.body;
    Reply proxied = call(serve.port(), "GET", "/metrics", "", {{"x-forwarded-for", "203.0.113.7"}});
    EXPECT_EQ(proxied.status, 403);
    EXPECT_EQ(proxied.body.find("alice"), std::string::npos) << proxied.body;
    EXPECT_NE(proxied.body.find("serve.metrics_token_env"), std::string::npos) << proxied.body;
  }
  ServeProcess serve(dir, plain_config(dir, "scraped.yaml", alice + ", metrics_token_env: SCRAPE_TOKEN}\n"), upstream.base_url(),
                     "scraped", {{"SCRAPE_TOKEN", "scrape-secret"}});
  for (const auto& auth : {std::string(), std::string("Bearer wrong"), std::string("Bearer scrape-secre")}) {
    Reply r = call(serve.port(), "GET", "/metrics", "", {{"authorization", auth}});
    EXPECT_EQ(r.status, 401) << auth;
    EXPECT_EQ(r.body.find("alice"), std::string::npos) << r.body;
  }
  Reply scraped = call(serve.port(), "GET", "/metrics", "", {{"authorization", "Bearer scrape-secret"}, {"x-forwarded-for", "10.0.0.9"}});
  EXPECT_EQ(scraped.status, 200);
  EXPECT_NE(scraped.body.find("compactor_serve_tenant_requests_total{tenant=\"alice\"} 0"), std::string::npos) << scraped.body;
  Reply health = call(serve.port(), "GET", "/healthz", "", {{"x-forwarded-for", "203.0.113.7"}});
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body.substr(0, 3), "ok\n") << health.body;
  EXPECT_EQ(health.body.find("alice"), std::string::npos) << health.body;
  // A token variable that is not set closes /metrics rather than open it.
  ServeProcess unset(dir, plain_config(dir, "unset.yaml", "serve: {metrics_token_env: NOT_SET_ANYWHERE}\n"), upstream.base_url(), "unset");
  Reply closed = call(unset.port(), "GET", "/metrics");
  EXPECT_EQ(closed.status, 403);
  EXPECT_NE(closed.body.find("NOT_SET_ANYWHERE, which is not set"), std::string::npos) << closed.body;
}

// A client rotating its token has two entries under its name for a while: either token is that
// client (one tenant, one conversation). A token given twice, and a name an API key's tenant
// could have, are refused.
TEST(ServeTenants, TwoTokensOfOneClientAreOneTenantWhileItRotates) {
  fs::path dir = test::scratch_folder_until_exit("serve-rotation");
  const std::string alice_new = receipt_of("alice-new-token").substr(7);
  Conversation session = test::load_or_die(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"));
  LoopbackHttpServer upstream(std::vector<test::ScriptedResponse>(2, test::ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\n"
                                << "archive: {dir: " << (dir / "archive").string() << "}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n"
                                << "serve:\n  clients:\n    - {name: alice, token_sha256: \"" << kAlice << "\"}\n"
                                << "    - {name: alice, token_sha256: \"" << alice_new << "\"}\n";
  ServeProcess serve(dir, "c.yaml", upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages", request_body(session, session.size() - 2), {{"x-compactor-token", "alice-token"}});
  ASSERT_EQ(r.status, 200) << r.body;
  r = call(serve.port(), "POST", "/v1/messages", request_body(session, session.size()), {{"x-compactor-token", "alice-new-token"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"alice\"}"), 2) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"hit\"}"), 1) << metrics;  // the same conversation
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", "{}", {{"x-compactor-token", "mallory-token"}}).status, 401);

  auto validated = [&](const std::string& clients) {
    std::ofstream(dir / "v.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000}\npipeline: []\nserve:\n  clients:\n" << clients;
    return test::run_cli({"validate", "--config", (dir / "v.yaml").string()});
  };
  test::CommandResult twice = validated(std::string("    - {name: alice, token_sha256: \"") + kAlice + "\"}\n    - {name: bob, token_sha256: \"" +
                                        kAlice + "\"}\n");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("serve.clients[1].token_sha256: the same token as serve.clients[0] (alice): each token is one client's"),
            std::string::npos)
      << twice.err;
  test::CommandResult key_like = validated(std::string("    - {name: key-0123456789abcdef, token_sha256: \"") + kAlice + "\"}\n");
  EXPECT_EQ(key_like.exit_code, 2);
  EXPECT_NE(key_like.err.find("\"key-0123456789abcdef\" starts with key-, which names the tenants of API keys"), std::string::npos)
      << key_like.err;
}

// A reload's line names what changed, by setting (a section, or a key of serve: and store:), never
// a value: an operator sees the reload took the client they added, and no token's hash.
TEST(ServeTenants, AReloadSaysWhatChangedAndNoValue) {
  fs::path dir = test::scratch_folder_until_exit("serve-reload-line");
  LoopbackHttpServer upstream({});
  const std::string alice = std::string("    - {name: alice, token_sha256: \"") + kAlice + "\"}\n";
  auto write = [&](const std::string& budget, const std::string& clients) {
    std::ofstream(dir / "c.yaml") << "version: 1\nbudget: " << budget << "\narchive: {dir: " << (dir / "archive").string()
                                  << "}\npipeline: []\nserve:\n  max_queued: 100\n  clients:\n" << clients;
  };
  write("{unit: chars, limit: 50000, target: 40000}", alice);
  ServeProcess serve(dir, "c.yaml", upstream.base_url());
  // The log from `from` on, once it holds `text` (or after 10 s): a change may be reloaded by the
  // signal or by the file's new time, whichever comes first; the other then finds nothing changed.
  auto logged = [&](std::size_t from, const std::string& text) {
    std::string log = serve.stderr_text();
    for (int i = 0; i < 1000 && log.find(text, from) == std::string::npos; ++i, log = serve.stderr_text())
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return log.substr(std::min(from, log.size()));
  };
  // The same meaning, written another way: nothing changed.
  std::size_t from = serve.stderr_text().size();
  write("{target: 40000, limit: 50000, unit: chars}", alice);
  serve.signal(SIGHUP);
  std::string since = logged(from, "validated and in use; ");
  EXPECT_NE(since.find("validated and in use; nothing changed\n"), std::string::npos) << since;
  EXPECT_EQ(since.find("changed: "), std::string::npos) << since;
  from = serve.stderr_text().size();
  write("{unit: chars, limit: 60000, target: 40000}", alice + "    - {name: bob, token_sha256: \"" + std::string(kBob) + "\"}\n");
  serve.signal(SIGHUP);
  since = logged(from, "validated and in use; changed: ");
  EXPECT_NE(since.find("validated and in use; changed: budget, serve.clients\n"), std::string::npos) << since;
  EXPECT_EQ(serve.stderr_text().find(kBob), std::string::npos) << "a token's hash was logged";
}

}  // namespace
}  // namespace compactor
