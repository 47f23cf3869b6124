// The cost gate inside serve, on a budget in tokens with a price table the test writes: two calls
// within the prompt cache's lifetime whose compaction would break more cache than it saves are
// declined (x-compactor-status, the warning's figures and the gate's metrics, each worked out
// here from the bodies), and a call after the lifetime commits. The cache state comes from the
// store: the previous call's history (what the cache holds) and its time (the state file's
// modification time, which the test moves back to make the cache cold). What each tenant saved,
// in tokens and in USD at its model's input price, is worked out the same way; a Gemini call is
// budgeted and priced for the model its URL names.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"
#include "support/tool_history.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

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

// What the chars4 meter counts: a message's JSON chars, or a text's, over 4, rounded up.
std::uint64_t chars4(const std::string& text) { return (test::code_points(text) + 3) / 4; }

// The provider's bill for one request's input, USD (per million tokens: input 3, cache write 3.75,
// cache read 0.30; at least 1,024 tokens to cache): a request under the shortest cacheable prefix
// is uncached input; a cached part under it is not read; the rest is written to the cache.
double input_cost(std::uint64_t size, std::uint64_t cached) {
  if (size < 1024) return static_cast<double>(size) * 3.00 / 1e6;
  const std::uint64_t read = cached >= 1024 ? std::min(cached, size) : 0;
  return (static_cast<double>(size - read) * 3.75 + static_cast<double>(read) * 0.30) / 1e6;
}

std::string usd(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "$%.4f", v);
  return out;
}

// The messages of a forwarded body, each as its JSON.
std::vector<std::string> forwarded_messages(const std::string& body) {
  std::vector<std::string> out;
  const json::value parsed = json::parse(body);
  for (const auto& m : parsed.at("messages").as_array()) out.push_back(json::serialize(m));
  return out;
}

// Every continuity state file's time set `seconds` back: the calls that wrote them happened then.
std::size_t age_state(const fs::path& archive, int seconds) {
  std::size_t aged = 0;
  for (const auto& e : fs::recursive_directory_iterator(archive))
    if (e.is_regular_file() && e.path().string().find("serve-state") != std::string::npos) {
      fs::last_write_time(e.path(), fs::last_write_time(e.path()) - std::chrono::seconds(seconds));
      ++aged;
    }
  return aged;
}

// `printf %s sk-ant-gate | sha256sum`: the tenant of that API key is `key-` and its first 16 digits.
constexpr const char* kTenant = "key-9b019bf61eef81e8";

// A history of 1 + 2n messages (a task, n Read exchanges; the first result 12,000 chars, the others
// 800). Messages' tokens by chars4: the task 14, each call 31, the first result 3,018, each other
// result 219; the system prompt "You are a coding agent." 6. The requests hold n = 6, 7, 8 and 9
// exchanges: 4,332, 4,584, 4,836 and 5,088 tokens. The model's window is 5,700 (the price table
// the test writes): the trigger at 0.8 is 4,560, so the first call goes out as it is and the others
// cross it; past halfway from the trigger to the window (5,130) the gate would be overruled, and no
// call gets there. micro (min_chars 5,000) can only mask the first result, which rewrites the
// history from its third message on: the prefix it keeps (system, task, first call: 51 tokens) is
// under the 1,024 the provider caches, so the compacted call writes all of itself to the cache.
TEST(ServeGate, TwoCallsWithinTheCacheLifetimeAreDeclinedAndOneAfterItCommits) {
  test::ScratchFolder dir("serve-gate");
  std::ofstream(dir / "prices.yaml") << "version: 1\nsource: the test\ndate: \"2026-12-01\"\nwindow_source: the test\nwindow_date: \"2026-12-01\"\n"
                                     << "default_model: gate-model\nmodels:\n  gate-model:\n    family: gate\n    match: [gate-model]\n"
                                     << "    input: 3.00\n    cache_write: 3.75\n    cache_read: 0.30\n    output: 15.00\n"
                                     << "    min_cacheable_tokens: 1024\n    cache_lifetime_s: 300\n    context_window: 5700\n";
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {window: auto, trigger: 0.8, target: 0.6}\nmeter: {kind: chars4}\nprices: prices.yaml\n"
                                << "archive: {dir: archive}\nplugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 5000}\n";
  const std::vector<std::string> history = test::tool_history(9, [](std::size_t i) { return i == 1 ? 12000 : 800; });
  const std::string system = "You are a coding agent.";
  auto size = [&](std::size_t count) {
    std::uint64_t s = chars4(system);
    for (std::size_t i = 0; i < count; ++i) s += chars4(history[i]);
    return s;
  };
  ASSERT_EQ(size(13), 4332u);
  ASSERT_EQ(size(19), 5088u);
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(4, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  ServeProcess serve(dir.path(), "c.yaml", upstream.base_url());
  auto send = [&](std::size_t count) {
    return call(serve.port(), "POST", "/v1/messages", test::messages_request(history, count, "gate-model", system), {{"x-api-key", "sk-ant-gate"}});
  };

  Reply first = send(13);
  EXPECT_EQ(first.headers["x-compactor-status"], "unchanged");
  Reply second = send(15), third = send(17);
  for (Reply* r : {&second, &third}) {
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->headers["x-compactor-status"], "declined");
  }
  const std::string warm = call(serve.port(), "GET", "/metrics").body;

  // After the cache's lifetime (the state says when the conversation's last call was sent).
  ASSERT_GT(age_state(dir / "archive", 600), 0u);
  Reply cold = send(19);
  EXPECT_EQ(cold.headers["x-compactor-status"], "compacted");
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;

  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i].body, test::messages_request(history, 13 + 2 * i, "gate-model", system)) << "call " << i + 1;
  // The committed compaction masked the first result and nothing else: what it takes off is the
  // result's tokens less its marker's, the same on every call.
  const std::vector<std::string> sent = forwarded_messages(got[3].body);
  ASSERT_EQ(sent.size(), 19u);
  for (std::size_t i = 0; i < 19; ++i) {
    if (i == 2) continue;
    EXPECT_EQ(sent[i], history[i]) << "message " << i;
  }
  EXPECT_NE(sent[2].find("sha256:"), std::string::npos) << sent[2];
  const std::uint64_t taken = chars4(history[2]) - chars4(sent[2]);
  const std::uint64_t kept = size(2);  // the prefix before the first change

  // Warm: the cache holds what the previous call sent; every later call reads the shorter history.
  double saved = 0, broken = 0;
  for (auto [count, previous, reply] : {std::tuple{15u, 13u, &second}, std::tuple{17u, 15u, &third}}) {
    const std::uint64_t in = size(count), out = in - taken;
    const double call_broken = input_cost(out, kept) - input_cost(in, size(previous));
    const double call_saved = input_cost(in, in) - input_cost(out, out);  // horizon: 7 or 8 calls / 19, at least 1
    EXPECT_GT(call_broken, call_saved);
    EXPECT_EQ(reply->headers["x-compactor-warning"],
              "cost gate declined: saves " + usd(call_saved) + " over the next 1 call, breaks " + usd(call_broken) + " of cache (warm)");
    saved += call_saved;
    broken += call_broken;
  }
  EXPECT_EQ(metric(warm, "compactor_serve_gate_total{decision=\"declined\"}"), 2) << warm;
  EXPECT_NEAR(metric(warm, "compactor_serve_gate_saved_usd_total{decision=\"declined\"}"), saved, 1e-12);
  EXPECT_NEAR(metric(warm, "compactor_serve_gate_broken_usd_total{decision=\"declined\"}"), broken, 1e-12);
  EXPECT_EQ(metric(warm, "compactor_serve_status_total{route=\"messages\",status=\"declined\"}"), 2) << warm;
  EXPECT_EQ(metric(warm, "compactor_serve_gate_total{decision=\"committed\"}"), -1) << warm;

  // Cold: nothing cached; the smaller call costs less even now.
  const std::uint64_t in = size(19), out = in - taken;
  EXPECT_EQ(metric(metrics, "compactor_serve_gate_total{decision=\"committed\"}"), 1) << metrics;
  EXPECT_NEAR(metric(metrics, "compactor_serve_gate_broken_usd_total{decision=\"committed\"}"), input_cost(out, 0) - input_cost(in, 0), 1e-12);
  EXPECT_NEAR(metric(metrics, "compactor_serve_gate_saved_usd_total{decision=\"committed\"}"), input_cost(in, in) - input_cost(out, out), 1e-12);
  EXPECT_EQ(metric(metrics, "compactor_serve_status_total{route=\"messages\",status=\"compacted\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_state_total{result=\"hit\"}"), 3) << metrics;

  // What went on, and what the tenant saved: only the committed call saved anything, its tokens at
  // the model's uncached input price.
  EXPECT_EQ(metric(metrics, "compactor_serve_size_in_total{unit=\"tokens\"}"), static_cast<double>(size(13) + size(15) + size(17) + in));
  EXPECT_EQ(metric(metrics, "compactor_serve_size_out_total{unit=\"tokens\"}"), static_cast<double>(size(13) + size(15) + size(17) + out));
  const std::string tenant = std::string("tenant=\"") + kTenant + "\"";
  // The key's first call counts as "unverified" (no upstream answer had vouched for the key yet).
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{" + tenant + "}"), 3) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_requests_total{tenant=\"unverified\"}"), 1) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_size_saved_total{" + tenant + ",unit=\"tokens\"}"), static_cast<double>(taken)) << metrics;
  EXPECT_NEAR(metric(metrics, "compactor_serve_tenant_saved_usd_total{" + tenant + "}"), static_cast<double>(taken) * 3.00 / 1e6, 1e-12);
}

// Gemini's request names its model in the URL only. With a window and a price for that model
// (20,000 tokens, $1.25 per million input tokens) beside a default model with a million-token
// window at $3, a body over the Gemini model's trigger is compacted, and what it saved is priced at
// the Gemini model's input price: budgeted for the default model it would go out as it came.
TEST(ServeGate, AGeminiCallIsBudgetedAndPricedForTheModelInItsUrl) {
  test::ScratchFolder dir("serve-gate-gemini");
  std::ofstream(dir / "prices.yaml") << "version: 1\nsource: the test\ndate: \"2026-12-01\"\nwindow_source: the test\nwindow_date: \"2026-12-01\"\n"
                                     << "default_model: big-model\nmodels:\n"
                                     << "  big-model:\n    family: big\n    match: [big-model]\n    input: 3.00\n    cache_write: 3.75\n"
                                     << "    cache_read: 0.30\n    output: 15.00\n    context_window: 1000000\n"
                                     << "  gemini-test:\n    family: gemini\n    match: [gemini-test]\n    input: 1.25\n    cache_write: 1.25\n"
                                     << "    cache_read: 0.125\n    output: 10.00\n    context_window: 20000\n";
  LoopbackHttpServer gemini({{200, {}, R"({"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]})"}});
  LoopbackHttpServer anthropic({});
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {window: auto, trigger: 0.8, target: 0.6}\nmeter: {kind: chars4}\nprices: prices.yaml\n"
                                << "archive: {dir: archive}\nplugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2, min_chars: 120}\n"
                                << "serve:\n  upstreams: {gemini: " << gemini.base_url() << "}\n";
  // Gemini CLI's shape: a task, then 12 read_file steps whose responses hold 8,000 chars each
  // (about 24,000 chars4 tokens in all: over the Gemini model's trigger of 16,000).
  std::string body = R"({"contents":[{"parts":[{"text":"Read the files one by one."}],"role":"user"})";
  for (int i = 1; i <= 12; ++i) {
    const std::string n = std::to_string(i);
    body += R"(,{"parts":[{"functionCall":{"id":"read_file_)" + n + R"(","args":{"file_path":"/w/f)" + n +
            R"(.txt"},"name":"read_file"}}],"role":"model"},{"parts":[{"functionResponse":{"name":"read_file","response":{"output":")" +
            std::string(8000, 'x') + R"("},"id":"read_file_)" + n + R"("}}],"role":"user"})";
  }
  body += R"(],"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},"tools":[{"functionDeclarations":[{"name":"read_file",)"
          R"("parametersJsonSchema":{"type":"object"}}]}]})";
  ServeProcess serve(dir.path(), "c.yaml", anthropic.base_url());
  // The key's only call: counted as "unverified", since no upstream answer had vouched for the key
  // (`printf %s AIzaSy-gemini-gate | sha256sum` names the tenant it becomes: key-affcbeafdd04b1cd).
  const std::string tenant = "tenant=\"unverified\"";
  Reply r = call(serve.port(), "POST", "/v1beta/models/gemini-test:generateContent", body, {{"x-goog-api-key", "AIzaSy-gemini-gate"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted") << r.headers["x-compactor-warning"];
  ASSERT_EQ(gemini.requests().size(), 1u);
  EXPECT_LT(gemini.requests()[0].body.size(), body.size() / 2);
  EXPECT_TRUE(anthropic.requests().empty());
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  const double in = metric(metrics, "compactor_serve_size_in_total{unit=\"tokens\"}");
  const double out = metric(metrics, "compactor_serve_size_out_total{unit=\"tokens\"}");
  EXPECT_GT(in, 16000) << metrics;
  EXPECT_LT(out, 16000) << metrics;
  EXPECT_EQ(metric(metrics, "compactor_serve_tenant_size_saved_total{" + tenant + ",unit=\"tokens\"}"), in - out) << metrics;
  EXPECT_NEAR(metric(metrics, "compactor_serve_tenant_saved_usd_total{" + tenant + "}"), (in - out) * 1.25 / 1e6, 1e-12) << metrics;
}

}  // namespace
}  // namespace compactor
