// What an operator reads of serve: what each tenant saved in USD under any budget unit, which
// config each replica runs (its hash and generation, in /metrics and on /healthz), what each call
// did (its response headers), and no store address in what a client is told.
#include "support/loopback_http_server.hpp"
#include "support/redis_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"
#include "support/tool_history.hpp"

#include "serve/dashboard_page.hpp"
#include "serve/outcome_headers.hpp"
#include "serve/store_redaction.hpp"

#include "compactor/build_fingerprint.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

// `printf %s alice-token | sha256sum`, and bob's.
constexpr const char* kAlice = "9c220f200955d76c0a38d308225e0ef10c5f971acaf2f8d1d8f732affa5bd1dc";
constexpr const char* kBob = "97dd3707015dcf069cf73022ed7173b1165db6eff24b441cb57fd069a8c4e525";

// What the chars4 meter counts: a message's JSON chars over 4, rounded up.
std::uint64_t chars4(const std::string& text) { return (test::code_points(text) + 3) / 4; }

std::vector<std::string> forwarded_messages(const std::string& body) {
  std::vector<std::string> out;
  const json::value parsed = json::parse(body);
  for (const auto& m : parsed.at("messages").as_array()) out.push_back(json::serialize(m));
  return out;
}

// The first 12 hex digits of the SHA-256 of what `compactor print-pipeline` prints for `config`,
// by coreutils' sha256sum.
std::string config_hash(const fs::path& config) {
  const test::CommandResult printed = test::run_cli({"print-pipeline", "--config", config.string()});
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
  const test::CommandResult summed = test::run_program("/usr/bin/sha256sum", {}, printed.out);
  return summed.out.substr(0, 12);
}

// serve's log, once it holds `text` after `from` (or after 10 s).
std::string logged(const ServeProcess& serve, std::size_t from, const std::string& text) {
  std::string log = serve.stderr_text();
  for (int i = 0; i < 1000 && log.find(text, from) == std::string::npos; ++i, log = serve.stderr_text())
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return log.substr(std::min(from, log.size()));
}

void write_prices(const fs::path& dir) {
  std::ofstream(dir / "prices.yaml") << "version: 1\nsource: the test\ndate: \"2026-12-01\"\nwindow_source: the test\nwindow_date: \"2026-12-01\"\n"
                                     << "default_model: op-model\nmodels:\n  op-model:\n    family: op\n    match: [op-model]\n"
                                     << "    input: 3.00\n    cache_write: 3.75\n    cache_read: 0.30\n    output: 15.00\n"
                                     << "    context_window: 200000\n";
}

// A budget in chars (the unit the old team template shipped with), a chars4 meter and a price of
// $3 per million input tokens; micro masks the one result over 5,000 chars.
std::string chars_config(const std::string& extra = "") {
  return std::string("version: 1\nbudget: {unit: chars, limit: 10000, target: 8000}\nmeter: {kind: chars4}\nprices: prices.yaml\n") +
         "archive: {dir: archive}\nplugin_dirs: [\"" + COMPACTOR_PLUGIN_DIR + "\"]\n" +
         "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 5000}\n" +
         "serve:\n  clients:\n    - {name: alice, token_sha256: \"" + kAlice + "\"}\n    - {name: bob, token_sha256: \"" + kBob + "\"}\n" + extra;
}

// A history of 7 messages (a task, 3 Read exchanges; the first result 12,000 chars, the others
// 800): about 14,000 chars, over the 10,000-char limit, so micro masks the first result. What the
// call saved in tokens is that result's chars4 less its marker's (the chars4 meter counts each
// message's JSON on its own; nothing else changed), worked out here from the forwarded body; in
// USD those tokens at $3 per million. Under a chars budget serve counted 0 USD before.
TEST(ServeOperator, WhatATenantSavedUnderACharsBudgetIsPricedInTokens) {
  test::ScratchFolder dir("serve-op-usd");
  write_prices(dir.path());
  std::ofstream(dir / "c.yaml") << chars_config();
  const std::vector<std::string> history = test::tool_history(3, [](std::size_t i) { return i == 1 ? 12000 : 800; });
  LoopbackHttpServer upstream({ScriptedResponse{200, {}, test::anthropic_reply("ok")}});
  ServeProcess serve(dir.path(), "c.yaml", upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages", test::messages_request(history, 7, "op-model", "You are a coding agent."),
                 {{"x-compactor-token", "alice-token"}, {"x-api-key", "sk-ant-a"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted") << r.headers["x-compactor-warning"];
  ASSERT_EQ(upstream.requests().size(), 1u);
  const std::vector<std::string> sent = forwarded_messages(upstream.requests()[0].body);
  ASSERT_EQ(sent.size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    if (i == 2) continue;
    EXPECT_EQ(sent[i], history[i]) << "message " << i;
  }
  ASSERT_NE(sent[2].find("sha256:"), std::string::npos) << sent[2];
  // 12,000 letters and the result's JSON around them (12,088 chars: 3,022 tokens) became a marker.
  ASSERT_EQ(chars4(history[2]), 3022u);
  const std::uint64_t tokens = chars4(history[2]) - chars4(sent[2]);
  const double usd = static_cast<double>(tokens) * 3.00 / 1e6;  // about $0.0089
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_size_saved_total{tenant=\"alice\",unit=\"chars\"}"),
            static_cast<double>(test::code_points(history[2]) - test::code_points(sent[2]))) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_saved_tokens_total{tenant=\"alice\"}"), static_cast<double>(tokens)) << metrics;
  EXPECT_NEAR(metric(metrics, "compactor_serve_tenant_saved_usd_total{tenant=\"alice\"}"), usd, 1e-12) << metrics;
  EXPECT_GT(usd, 0.008);
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_saved_usd_total{tenant=\"bob\"}"), 0) << metrics;
}

// Which config runs, in /metrics and on /healthz: its hash (of the config as resolved, what
// print-pipeline prints: the same for two replicas of one file) and its generation, 1 at start
// and 2 after the file changed and was reloaded, with the new hash and no series of the old one;
// /healthz names the build as `compactor --version` does.
TEST(ServeOperator, TheConfigInUseIsNamedByItsHashAndGeneration) {
  test::ScratchFolder dir("serve-op-config");
  write_prices(dir.path());
  std::ofstream(dir / "c.yaml") << chars_config();
  const std::string first = config_hash(dir / "c.yaml");
  ASSERT_EQ(first.size(), 12u);
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir.path(), "c.yaml", upstream.base_url()), replica(dir.path(), "c.yaml", upstream.base_url(), "replica");
  const std::string version = test::run_cli({"--version"}).out;
  const std::string build = "build: " + version.substr(10, version.find('\n') - 10) + " fingerprint " + kBuildFingerprint + "\n";
  for (const ServeProcess* s : {&serve, &replica}) {
    const std::string metrics = call(s->port(), "GET", "/metrics").body;
    EXPECT_EQ(metric(metrics, "compactor_serve_config_info{hash=\"" + first + "\",generation=\"1\"}"), 1) << metrics;
    Reply health = call(s->port(), "GET", "/healthz");
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, "ok\nconfig: " + first + " generation 1\n" + build);
  }

  const std::size_t from = serve.stderr_text().size();
  std::ofstream(dir / "c.yaml") << chars_config("  max_queued: 7\n");
  const std::string second = config_hash(dir / "c.yaml");
  ASSERT_NE(second, first);
  ASSERT_NE(logged(serve, from, "validated and in use").find("validated and in use"), std::string::npos) << serve.stderr_text();
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_config_info{hash=\"" + second + "\",generation=\"2\"}"), 1) << metrics;
  EXPECT_EQ(metrics.find(first), std::string::npos) << metrics;
  EXPECT_EQ(call(serve.port(), "GET", "/healthz").body, "ok\nconfig: " + second + " generation 2\n" + build);
}

// What a response says of its call: the size before (what the client sent) and after (what went
// on) in the budget's unit, the receipts this call archived, and a status of what this call did.
// The second call continues the first's compacted history and changes nothing itself: it still
// goes out smaller than the client sent it, by exactly the first call's masking, and says
// `unchanged` (main said `compacted`), with no receipts.
TEST(ServeOperator, EachResponseSaysTheSizesAndReceiptsOfItsOwnCall) {
  test::ScratchFolder dir("serve-op-headers");
  write_prices(dir.path());
  std::ofstream(dir / "c.yaml") << chars_config();
  const std::vector<std::string> history = test::tool_history(4, [](std::size_t i) { return i == 1 ? 12000 : 800; });
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(2, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), "c.yaml", upstream.base_url());
  auto send = [&](std::size_t count) {
    return call(serve.port(), "POST", "/v1/messages", test::messages_request(history, count, "op-model", "You are a coding agent."),
                {{"x-compactor-token", "alice-token"}, {"x-api-key", "sk-ant-a"}});
  };
  Reply first = send(7);
  Reply second = send(9);
  ASSERT_EQ(upstream.requests().size(), 2u);
  const std::vector<std::string> sent = forwarded_messages(upstream.requests()[0].body);
  ASSERT_EQ(sent.size(), 7u);
  const std::string receipt = sent[2].substr(sent[2].find("sha256:"), 71);
  // What the masking took off, in chars: the only change either call forwards.
  const std::uint64_t taken = test::code_points(history[2]) - test::code_points(sent[2]);
  auto number = [](Reply& r, const char* name) { return std::stoull(r.headers.count(name) ? r.headers[name] : "0"); };

  EXPECT_EQ(first.headers["x-compactor-status"], "compacted");
  EXPECT_EQ(first.headers["x-compactor-size-unit"], "chars");
  EXPECT_EQ(number(first, "x-compactor-size-before") - number(first, "x-compactor-size-after"), taken);
  EXPECT_GT(number(first, "x-compactor-size-before"), 10000u);  // over the limit: why micro ran
  EXPECT_EQ(first.headers["x-compactor-receipts"], receipt);

  EXPECT_EQ(second.headers["x-compactor-status"], "unchanged") << second.headers["x-compactor-warning"];
  EXPECT_EQ(number(second, "x-compactor-size-before") - number(second, "x-compactor-size-after"), taken);
  EXPECT_EQ(number(second, "x-compactor-size-before") - number(first, "x-compactor-size-before"),
            test::code_points(history[7]) + test::code_points(history[8]));  // the two new messages
  EXPECT_EQ(second.headers.count("x-compactor-receipts"), 0u) << second.headers["x-compactor-receipts"];
  EXPECT_EQ(forwarded_messages(upstream.requests()[1].body)[2], sent[2]);  // the earlier compaction, carried on
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_EQ(metric(metrics, "compactor_serve_status_total{route=\"messages\",status=\"unchanged\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_size_in_total{unit=\"chars\"}"),
            static_cast<double>(number(first, "x-compactor-size-before") + number(second, "x-compactor-size-before")));
}

// The receipts header is bounded: past its length the receipts left out are counted in "+N".
TEST(ServeOperator, TheReceiptsHeaderIsBounded) {
  serve::JobOutcome o;
  o.result = serve::JobOutcome::compacted;
  o.changed = true;
  for (std::size_t i = 0; i < serve::JobOutcome::kMaxReceipts; ++i) o.receipts.push_back("sha256:" + std::string(64, static_cast<char>('a' + i % 6)));
  o.receipt_count = 100;
  const std::string header = serve::receipts_header(o);
  EXPECT_LE(header.size(), serve::kMaxReceiptsHeader);
  const std::size_t listed = static_cast<std::size_t>(std::count(header.begin(), header.end(), ','));  // the last comma is the count's
  EXPECT_EQ(header.substr(header.rfind(',') + 1), "+" + std::to_string(100 - listed)) << header;
  EXPECT_EQ(header.substr(0, 72), o.receipts[0] + ",");
  o.receipts.resize(2);
  o.receipt_count = 2;
  EXPECT_EQ(serve::receipts_header(o), o.receipts[0] + "," + o.receipts[1]);
}

// The page escapes every name and value it writes: a tenant named like markup stays text.
TEST(ServeOperator, TheDashboardEscapesWhatItWrites) {
  serve::DashboardView v;
  v.ledger.tenants["<img src=x onerror=alert(1)>"].calls = 3;
  v.ledger.recent.push_back(serve::OperatorLedger::Compaction{0, "a&b", "chars", 10, 5, {"sha256:\"x\""}, 1});
  v.config_path = "/etc/<c>.yaml";
  v.config_hash = "abc";
  const serve::Reply page = serve::dashboard_reply(v);
  EXPECT_EQ(page.body.find("<img"), std::string::npos);
  EXPECT_NE(page.body.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(page.body.find("a&amp;b"), std::string::npos);
  EXPECT_NE(page.body.find("sha256:&quot;x&quot;"), std::string::npos);
  EXPECT_NE(page.body.find("/etc/&lt;c&gt;.yaml"), std::string::npos);
  EXPECT_EQ(page.body.find("<script"), std::string::npos);
  EXPECT_EQ(serve::html_escaped("'\"<>&"), "&#39;&quot;&lt;&gt;&amp;");
}

// The team template runs the default's pipeline: configs/deploy/serve.yaml, resolved, is
// configs/default.yaml's budget, meter, prices, stages and their params, on_prompt_too_long
// included (it kept 5 messages and a 1,000-char summary there); only where it archives and its
// serve: section differ. Both are read where they ship (a copy of configs/, the template given
// the client it asks for).
std::string without_sections(const std::string& resolved, const std::vector<std::string>& sections) {
  std::string out, line;
  std::istringstream in(resolved);
  bool skipping = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ') {
      skipping = false;
      for (const auto& s : sections) skipping = skipping || line == s + ":";
    }
    if (!skipping) out += line + "\n";
  }
  return out;
}

TEST(ServeOperator, TheTeamTemplateRunsTheDefaultsPipeline) {
  test::ScratchFolder dir("serve-op-template");
  fs::copy(COMPACTOR_CONFIGS_DIR, dir / "configs", fs::copy_options::recursive);
  std::string text = test::read_file((dir / "configs/deploy/serve.yaml").string());
  const std::string empty = "  clients: []\n";
  ASSERT_NE(text.find(empty), std::string::npos);
  text.replace(text.find(empty), empty.size(), std::string("  clients: [{name: alice, token_sha256: \"") + kAlice + "\"}]\n");
  std::ofstream(dir / "configs/deploy/serve.yaml") << text;
  const test::CommandResult deploy = test::run_cli({"print-pipeline", "--config", (dir / "configs/deploy/serve.yaml").string()});
  const test::CommandResult standard = test::run_cli({"print-pipeline", "--config", (dir / "configs/default.yaml").string()});
  ASSERT_EQ(deploy.exit_code, 0) << deploy.err;
  ASSERT_EQ(standard.exit_code, 0) << standard.err;
  EXPECT_NE(deploy.out.find("  - stage: \"arrival\""), std::string::npos) << deploy.out;
  EXPECT_EQ(without_sections(deploy.out, {"archive", "serve"}), without_sections(standard.out, {"archive", "serve"}));
}

// An /mcp error passed on from a Redis store ("no blob …" for a receipt it does not hold) tells
// the client nothing of where the store is: no redis:// URL, no host and port, `<store>` in its
// place. The same for a call whose archive could not be written (Redis gone): its
// x-compactor-warning names `<store>`, while serve's log still names the address for the operator.
TEST(ServeOperator, NoStoreAddressReachesAClient) {
  test::RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  test::ScratchFolder dir("serve-op-redact");
  write_prices(dir.path());
  std::ofstream(dir / "c.yaml") << chars_config() << redis.store_yaml("timeout_ms: 300");
  LoopbackHttpServer upstream({ScriptedResponse{200, {}, test::anthropic_reply("ok")}});
  ServeProcess serve(dir.path(), "c.yaml", upstream.base_url());
  const std::string address = "127.0.0.1:" + std::to_string(redis.port());
  const json::object message{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
                             {"params", json::object{{"name", "restore"},
                                                     {"arguments", json::object{{"receipt", "sha256:" + std::string(64, '0')}}}}}};
  Reply r = call(serve.port(), "POST", "/mcp", json::serialize(message),
                 {{"authorization", "Bearer alice-token"}, {"mcp-protocol-version", "2025-06-18"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json::value answer = json::parse(r.body);
  EXPECT_TRUE(answer.at("result").at("isError").as_bool()) << r.body;
  EXPECT_NE(r.body.find("<store> (tenant alice): no blob sha256:0000"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("redis://"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find(address), std::string::npos) << r.body;

  redis.kill_hard();
  const std::vector<std::string> history = test::tool_history(3, [](std::size_t i) { return i == 1 ? 12000 : 800; });
  Reply down = call(serve.port(), "POST", "/v1/messages", test::messages_request(history, 7, "op-model", "You are a coding agent."),
                    {{"x-compactor-token", "alice-token"}, {"x-api-key", "sk-ant-a"}});
  EXPECT_EQ(down.status, 200) << down.body;
  const std::string warning = down.headers["x-compactor-warning"];
  EXPECT_NE(warning.find("the store could not archive what compaction would remove"), std::string::npos) << warning;
  EXPECT_NE(warning.find("<store>"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("redis://"), std::string::npos) << warning;
  EXPECT_EQ(warning.find(address), std::string::npos) << warning;
  EXPECT_NE(serve.stderr_text().find("redis://" + address), std::string::npos) << "the operator's log lost the store's address";
}

// The redaction itself: a Redis URL with a password, a cluster's other node, a unix socket and the
// archive folder, each hidden wherever a sentence writes it.
TEST(ServeOperator, TheRedactionHidesEveryStoreAddressAndTheArchiveFolder) {
  StoreConfig redis;
  redis.kind = StoreConfig::Kind::redis;
  redis.host = "10.0.0.5";
  redis.port = 6380;
  const serve::StoreRedaction shown(redis, "/var/lib/compactor/archive/");
  EXPECT_EQ(shown("redis://10.0.0.5:6380/0 (tenant alice): no blob sha256:ab in this store"),
            "<store> (tenant alice): no blob sha256:ab in this store");
  EXPECT_EQ(shown("cannot connect to rediss://u:pa55@10.0.0.6:7000/2, then 10.0.0.5:6380 timed out"),
            "cannot connect to <store>, then <store> timed out");
  EXPECT_EQ(shown("cannot write /var/lib/compactor/archive/tenants/alice/x.tmp: No space left"),
            "cannot write <archive>/tenants/alice/x.tmp: No space left");
  StoreConfig socket = redis;
  socket.socket = "/run/redis/redis.sock";
  EXPECT_EQ(serve::StoreRedaction(socket, "/a")("unix:///run/redis/redis.sock?db=0: refused; /run/redis/redis.sock gone"),
            "<store>: refused; <store> gone");
  EXPECT_EQ(shown("nothing of a store here"), "nothing of a store here");
}

}  // namespace
}  // namespace compactor
