// What an operator reads of serve: what each tenant saved in USD under any budget unit, which
// config each replica runs (its hash and generation, in /metrics and on /healthz), what each call
// did (its response headers), and no store address in what a client is told.
#include "support/loopback_http_server.hpp"
#include "support/redis_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"
#include "support/tool_history.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

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

double metric(const std::string& metrics, const std::string& series) {
  const std::size_t at = metrics.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + series.size() + 2));
}

std::vector<std::string> forwarded_messages(const std::string& body) {
  std::vector<std::string> out;
  const json::value parsed = json::parse(body);
  for (const auto& m : parsed.at("messages").as_array()) out.push_back(json::serialize(m));
  return out;
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

}  // namespace
}  // namespace compactor
