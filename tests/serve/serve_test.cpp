// `compactor serve` against a fake upstream on loopback (tests/support/loopback_http_server): the
// built CLI runs as a separate process on a free port; each test's upstream records what it
// received. Nothing leaves the machine.
#include "support/loopback_http_server.hpp"
#include "support/redis_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include "bench/replay.hpp"

#include "model/conversation_reader.hpp"
#include "import/importers.hpp"
#include "wire/openai_chat/openai_log.hpp"
#include "host/pipeline.hpp"
#include "host/stderr_logger.hpp"
#include "wire/openai_chat/openai_chat.hpp"
#include "archive/archive_store.hpp"
#include "mcp/blob_view.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <thread>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using test::LoopbackHttpServer;
using test::ScriptedResponse;
using test::ServeProcess;
using test::Reply;
using test::call;

fs::path fresh_dir(const std::string& name) { return test::scratch_folder_until_exit("serve-" + name); }

// A request body around a session's first `count` messages; `breakpoint`: the newest message's
// last block carries cache_control, as agents mark it on every call.
std::string request_body(const Conversation& c, std::size_t count, bool stream = false, bool system = true,
                         bool breakpoint = false) {
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,)";
  if (system) body += R"("system":"You are a coding agent.",)";
  if (stream) body += R"("stream":true,)";
  body += R"("messages":[)";
  for (std::size_t i = 0; i < count; ++i) {
    std::string raw(c[i].raw());
    if (breakpoint && i + 1 == count && raw.size() > 3 && raw.compare(raw.size() - 3, 3, "}]}") == 0)
      raw.insert(raw.size() - 3, R"(,"cache_control":{"type":"ephemeral"})");
    body += (i ? "," : "") + raw;
  }
  return body + "]}";
}

// A message's JSON without cache_control, serialized: what the comparison with the bench sees.
std::string normalized(const Message& m) {
  json::object o = m.json();
  if (auto* content = o.if_contains("content"); content != nullptr && content->is_array())
    for (auto& block : content->get_array())
      if (block.is_object()) block.get_object().erase("cache_control");
  return json::serialize(o) + "\n";
}

std::string write_config(const fs::path& dir, const std::string& extra, const std::string& name = "c.yaml",
                         const std::string& pipeline = "") {
  std::string text = std::string("version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\n") +
                     "plugin_dirs: [\"" + COMPACTOR_PLUGIN_DIR + "\", \"" + COMPACTOR_TEST_PLUGIN_DIR + "\"]\n" +
                     (pipeline.empty() ? "pipeline:\n"
                                         "  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                                         "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n"
                                         "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 1000, max_summaries: 2, min_growth: 1000}\n"
                                         "on_prompt_too_long:\n  - stage: reactive_compact\n    params: {keep_messages: 5}\n"
                                       : pipeline) +
                     extra;
  std::ofstream(dir / name) << text;
  return name;
}

int check_file(const fs::path& file, std::string* err = nullptr) {
  auto r = test::run_cli({"check", "--input", file.string()});
  if (err != nullptr) *err = r.err;
  return r.exit_code;
}

const char* kSession = "cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json";

TEST(Serve, CompactsTheMessagesForwardsTheClientsHeadersAndReturnsTheResponseUnchanged) {
  fs::path dir = fresh_dir("compact");
  Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string reply = test::anthropic_reply("done");
  LoopbackHttpServer upstream({{200, {{"request-id", "req_1"}}, reply}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  const std::string body = request_body(session, session.size());
  Reply r = call(serve.port(), "POST", "/v1/messages?beta=true", body,
                 {{"x-api-key", "sk-ant-test-secret"}, {"anthropic-version", "2023-06-01"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, reply);
  EXPECT_EQ(r.headers["request-id"], "req_1");
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted");
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].target, "/v1/messages?beta=true");
  EXPECT_EQ(got[0].headers["x-api-key"], "sk-ant-test-secret");
  EXPECT_EQ(got[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_LT(got[0].body.size(), body.size() / 2);
  // The other fields went out as they came; the forwarded body passes every checker.
  json::value sent = json::parse(got[0].body);
  EXPECT_EQ(sent.at("model"), "claude-sonnet-4-5");
  EXPECT_EQ(sent.at("system"), "You are a coding agent.");
  std::ofstream(dir / "sent.json") << got[0].body;
  std::string err;
  EXPECT_EQ(check_file(dir / "sent.json", &err), 0) << err;
  serve.stop();
  EXPECT_EQ(serve.stderr_text().find("sk-ant-test-secret"), std::string::npos) << "the key was logged";
  fs::remove_all(dir);
}

TEST(Serve, StreamingIsPassedThroughByteIdenticalChunkByChunk) {
  fs::path dir = fresh_dir("stream");
  Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string first = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n";
  const std::string rest =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\\u00e9llo\"}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  // The upstream sends the rest only after the client has received the first event: it can only
  // have, if the server passes chunks on as they arrive.
  std::promise<void> client_saw_first;
  auto gate = client_saw_first.get_future().share();
  ScriptedResponse streamed{200, {{"content-type", "text/event-stream"}}, ""};
  streamed.chunks = {first, rest};
  streamed.between_chunks = [gate] { gate.wait_for(std::chrono::seconds(30)); };
  LoopbackHttpServer upstream({streamed});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());

  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), serve.port()));
  http::request<http::string_body> req{http::verb::post, "/v1/messages", 11};
  req.set(http::field::host, "127.0.0.1");
  req.body() = request_body(session, session.size(), true);
  req.prepare_payload();
  http::write(socket, req);
  std::string raw;
  char buf[4096];
  beast::error_code ec;
  while (raw.find("message_start\",\"message\"") == std::string::npos && !ec) {
    std::size_t n = socket.read_some(asio::buffer(buf), ec);
    raw.append(buf, n);
  }
  ASSERT_NE(raw.find("message_start\",\"message\""), std::string::npos) << raw;
  EXPECT_EQ(raw.find("message_stop"), std::string::npos) << "the rest came before the upstream sent it";
  client_saw_first.set_value();
  while (!ec) {
    std::size_t n = socket.read_some(asio::buffer(buf), ec);
    raw.append(buf, n);
    if (raw.size() >= 5 && raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0) break;
  }
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  parser.put(asio::buffer(raw), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_done());
  EXPECT_EQ(parser.get().result_int(), 200u);
  EXPECT_EQ(parser.get()[http::field::content_type], "text/event-stream");
  EXPECT_EQ(parser.get().body(), first + rest);
  fs::remove_all(dir);
}

TEST(Serve, APromptTooLongRefusalRunsOnPromptTooLongAndRetriesOnce) {
  fs::path dir = fresh_dir("ptl");
  Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string refusal =
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})";
  const std::string reply = test::anthropic_reply("done");
  // Nothing to do before the call (49 messages, snip starts above 50); after a refusal,
  // reactive_compact keeps the newest 5 messages.
  const std::string pipeline = "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                               "on_prompt_too_long:\n  - stage: reactive_compact\n    params: {keep_messages: 5}\n";
  {
    LoopbackHttpServer upstream({{400, {}, refusal}, {200, {}, reply}});
    ServeProcess serve(dir, write_config(dir, "", "c.yaml", pipeline), upstream.base_url());
    Reply r = call(serve.port(), "POST", "/v1/messages", request_body(session, session.size()));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, reply);
    auto got = upstream.requests();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].body, request_body(session, session.size()));
    EXPECT_LT(got[1].body.size(), got[0].body.size() / 2);
    std::ofstream(dir / "retry.json") << got[1].body;
    EXPECT_EQ(check_file(dir / "retry.json"), 0);
    std::string metrics = call(serve.port(), "GET", "/metrics").body;
    EXPECT_NE(metrics.find("\ncompactor_serve_retries_total 1\n"), std::string::npos) << metrics;
  }
  {
    // A body the checkers refuse is forwarded as it came; after a refusal nothing is sent again,
    // and no retry is counted.
    fs::create_directories(dir / "refused");
    LoopbackHttpServer upstream({{400, {}, refusal}});
    ServeProcess serve(dir / "refused", write_config(dir / "refused", "", "c.yaml", pipeline), upstream.base_url());
    const std::string split = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},)"
                              R"({"role":"assistant","content":[{"type":"tool_use","id":"t","name":"R","input":{}}]}]})";
    Reply r = call(serve.port(), "POST", "/v1/messages", split);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(upstream.requests().size(), 1u);
    std::string metrics = call(serve.port(), "GET", "/metrics").body;
    EXPECT_EQ(metrics.find("\ncompactor_serve_retries_total 1"), std::string::npos) << metrics;
  }
  {
    // A second refusal goes back to the client as the upstream sent it (a fresh archive: no state).
    fs::create_directories(dir / "second");
    dir = dir / "second";
    LoopbackHttpServer upstream({{400, {{"request-id", "req_2"}}, refusal}, {400, {{"request-id", "req_3"}}, refusal}});
    ServeProcess serve(dir, write_config(dir, "", "c.yaml", pipeline), upstream.base_url());
    Reply r = call(serve.port(), "POST", "/v1/messages", request_body(session, session.size()));
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.body, refusal);
    EXPECT_EQ(r.headers["request-id"], "req_3");
    EXPECT_EQ(upstream.requests().size(), 2u);
  }
  fs::remove_all(dir.parent_path());
}

TEST(Serve, UpstreamErrorsAndOtherPathsPassThrough) {
  fs::path dir = fresh_dir("errors");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  const std::string limited = R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})";
  LoopbackHttpServer upstream({{429, {{"retry-after", "7"}}, limited},
                               {200, {}, R"({"input_tokens":12})"},
                               {200, {}, R"({"data":[]})"}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages", body);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.body, limited);
  EXPECT_EQ(r.headers["retry-after"], "7");
  Reply count = call(serve.port(), "POST", "/v1/messages/count_tokens", body);
  EXPECT_EQ(count.body, R"({"input_tokens":12})");
  Reply models = call(serve.port(), "GET", "/v1/models?limit=2");
  EXPECT_EQ(models.body, R"({"data":[]})");
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].body, body);  // within budget: the client's own bytes
  EXPECT_EQ(got[1].target, "/v1/messages/count_tokens");
  EXPECT_EQ(got[1].body, body);
  EXPECT_EQ(got[2].method, "GET");
  EXPECT_EQ(got[2].target, "/v1/models?limit=2");

  EXPECT_EQ(call(serve.port(), "GET", "/healthz").status, 200);
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("compactor_serve_requests_total{route=\"messages\",outcome=\"unchanged\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("compactor_serve_upstream_errors_total{status=\"429\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("compactor_serve_requests_total{route=\"messages_other\",outcome=\"passed\"} 1"), std::string::npos) << metrics;
  // Within budget no stage can act: the call took the path without a worker.
  EXPECT_NE(metrics.find("compactor_serve_path_seconds_count{path=\"fast\"} 1"), std::string::npos) << metrics;
  fs::remove_all(dir);
}

// Pipelines are limited, not connections: with one worker busy (a stage that takes two seconds)
// and serve.max_queued 1 taken, the next compacting request is refused (529, Retry-After) before
// its body is read, and the two others are answered. A body over serve.max_body_bytes is refused
// unread.
TEST(Serve, LimitsAreEnforced) {
  fs::path dir = fresh_dir("limits");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("a")}, {200, {}, test::anthropic_reply("b")}});
  const std::string hold = "pipeline:\n  - stage: misbehave\n    params: {mode: hold}\n";
  const fs::path stage_log = dir / "stage.log", release = dir / "release";
  ServeProcess serve(dir, write_config(dir, "serve: {workers: 1, max_queued: 1, max_body_bytes: 2048}\n", "c.yaml", hold),
                     upstream.base_url(), "serve",
                     {{"COMPACTOR_TEST_STAGE_LOG", stage_log.string()}, {"COMPACTOR_TEST_HOLD_FILE", release.string()}});
  auto metric = [&](const std::string& line) {
    return call(serve.port(), "GET", "/metrics").body.find(line) != std::string::npos;
  };
  auto eventually = [](const std::function<bool()>& done) {
    for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  // One request in the worker (its stage has started, and holds until released), then one
  // waiting for it: the queue is full until the test releases the first.
  auto running = std::async(std::launch::async, [&] { return call(serve.port(), "POST", "/v1/messages", body); });
  const bool in_worker = eventually([&] { return fs::exists(stage_log); });
  auto waiting = std::async(std::launch::async, [&] { return call(serve.port(), "POST", "/v1/messages", body); });
  const bool queued = in_worker && eventually([&] { return metric("compactor_serve_pipelines_waiting 1"); });
  Reply busy = queued ? call(serve.port(), "POST", "/v1/messages", body) : Reply{};
  std::ofstream(release) << "go";
  ASSERT_TRUE(in_worker) << "the first request's stage never started";
  ASSERT_TRUE(queued) << "the second request never waited for the worker";
  EXPECT_EQ(busy.status, 529);
  EXPECT_EQ(busy.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(busy.body).at("error").at("type"), "overloaded_error");
  EXPECT_EQ(running.get().status, 200);
  EXPECT_EQ(waiting.get().status, 200);
  EXPECT_TRUE(metric("compactor_serve_rejections_total{reason=\"queue_full\"} 1"));

  std::string big = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":")" + std::string(4096, 'x') + "\"}]}";
  Reply too_big = call(serve.port(), "POST", "/v1/messages", big);
  EXPECT_EQ(too_big.status, 413);
  EXPECT_EQ(json::parse(too_big.body).at("error").at("type"), "request_too_large");
  EXPECT_TRUE(metric("compactor_serve_rejections_total{reason=\"body_size\"} 1"));
  EXPECT_EQ(upstream.requests().size(), 2u);
  fs::remove_all(dir);
}

// Each I/O thread keeps its upstream connections open between calls: eight calls through one
// thread, each on a new client connection, reach the upstream over one connection (the stand-in
// upstream answers one connection at a time, so one thread keeps this test from waiting on it).
TEST(Serve, UpstreamConnectionsAreKeptWarmBetweenCalls) {
  fs::path dir = fresh_dir("warm");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  std::vector<ScriptedResponse> script(8, ScriptedResponse{200, {}, test::anthropic_reply("warm")});
  LoopbackHttpServer upstream(script, "127.0.0.1", true);
  ServeProcess serve(dir, write_config(dir, "serve: {io_threads: 1}\n"), upstream.base_url());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body).status, 200);
  EXPECT_EQ(upstream.requests().size(), 8u);
  EXPECT_EQ(upstream.connections(), 1u);
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("compactor_serve_upstream_connections_total{kind=\"new\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("compactor_serve_upstream_connections_total{kind=\"reused\"} 7"), std::string::npos) << metrics;
  fs::remove_all(dir);
}

TEST(Serve, APipelineThatCrashesFailsOpenOrIsRejectedAndTheServerLivesOn) {
  fs::path dir = fresh_dir("crash");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  const std::string crash = "pipeline:\n  - stage: misbehave\n    params: {mode: segv}\n";
  {
    LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("a")}, {200, {}, test::anthropic_reply("b")}});
    ServeProcess serve(dir, write_config(dir, "", "c.yaml", crash), upstream.base_url());
    for (int i = 0; i < 2; ++i) {
      Reply r = call(serve.port(), "POST", "/v1/messages", body);
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(r.headers["x-compactor-status"], "failed");
      EXPECT_NE(r.headers["x-compactor-warning"].find("stage misbehave"), std::string::npos) << r.headers["x-compactor-warning"];
    }
    auto got = upstream.requests();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].body, body);
  }
  {
    LoopbackHttpServer upstream({});
    ServeProcess serve(dir, write_config(dir, "serve: {on_failure: reject}\n", "c.yaml", crash), upstream.base_url());
    Reply r = call(serve.port(), "POST", "/v1/messages", body);
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(json::parse(r.body).at("type"), "error");
    EXPECT_EQ(json::parse(r.body).at("error").at("type"), "api_error");
    // The OpenAI route the same, in OpenAI's error shape.
    const std::string chat = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
    r = call(serve.port(), "POST", "/v1/chat/completions", chat);
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(r.headers["x-compactor-status"], "failed");
    EXPECT_EQ(json::parse(r.body).at("error").at("type"), "server_error");
    EXPECT_TRUE(upstream.requests().empty());
  }
  {
    // Failing open on the OpenAI route: the client's body, as it came.
    LoopbackHttpServer upstream({{200, {}, test::openai_reply("ok")}});
    ServeProcess serve(dir, write_config(dir, "", "c.yaml", crash), upstream.base_url());
    const std::string chat = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
    Reply r = call(serve.port(), "POST", "/v1/chat/completions", chat);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.headers["x-compactor-status"], "failed");
    ASSERT_EQ(upstream.requests().size(), 1u);
    EXPECT_EQ(upstream.requests()[0].body, chat);
  }
  fs::remove_all(dir);
}

TEST(Serve, InputTheCheckersRefuseIsForwardedUntouchedWithAWarning) {
  fs::path dir = fresh_dir("refused");
  // A tool_use with no result after it: the API would refuse it; Compactor does not repair it.
  const std::string body =
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]},{"role":"user","content":"go on"}]})";
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("a")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages", body);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "refused");
  EXPECT_NE(r.headers["x-compactor-warning"].find("toolu_1"), std::string::npos) << r.headers["x-compactor-warning"];
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].body, body);
  fs::remove_all(dir);
}

TEST(Serve, ReloadTakesAGoodConfigAndRefusesABadOneWithLocatedErrors) {
  fs::path dir = fresh_dir("reload");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  LoopbackHttpServer upstream({{200, {}, "{}"}, {200, {}, "{}"}, {200, {}, "{}"}});
  ServeProcess serve(dir, write_config(dir, "serve: {max_body_bytes: 100000}\n"), upstream.base_url());
  auto wait_for = [&](const std::string& text, std::size_t count) {
    for (int i = 0; i < 3000; ++i) {
      std::string err = serve.stderr_text();
      std::size_t n = 0;
      for (std::size_t p = 0; (p = err.find(text, p)) != std::string::npos; p += text.size()) ++n;
      if (n >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  // Counted from zero, so that an alert on refused reloads has a series before the first.
  const std::string before = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(before.find("compactor_serve_reloads_total{result=\"refused\"} 0\n"), std::string::npos) << before;
  EXPECT_NE(before.find("compactor_serve_reloads_total{result=\"ok\"} 0\n"), std::string::npos) << before;
  // A bad config: refused with the same located error as `validate`; the old one keeps serving.
  // Replaced by rename, as editors and deploy tools do: the server sees the whole file or none.
  // The file watcher and SIGHUP may both reload it; each reload validates in full.
  std::string text = test::read_file((dir / "c.yaml").string()) + "recent: {exchanges: many}\n";
  std::ofstream(dir / "next.yaml") << text;
  fs::rename(dir / "next.yaml", dir / "c.yaml");
  serve.signal(SIGHUP);
  ASSERT_TRUE(wait_for(") refused: ", 1)) << serve.stderr_text();
  EXPECT_NE(serve.stderr_text().find("c.yaml:18:21: recent.exchanges: expected an integer"), std::string::npos) << serve.stderr_text();
  std::string big = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":")" + std::string(4096, 'x') + "\"}]}";
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", big).status, 200);
  // A good one is swapped in: the smaller body limit now applies.
  write_config(dir, "serve: {max_body_bytes: 2048}\n", "next.yaml");
  fs::rename(dir / "next.yaml", dir / "c.yaml");
  serve.signal(SIGHUP);
  ASSERT_TRUE(wait_for("compactor serve: reloaded", 1)) << serve.stderr_text();
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", big).status, 413);
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", body).status, 200);
  // Each counted (the watcher and SIGHUP may both have reloaded the same file: once or twice each).
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  auto count = [&](const std::string& series) {
    const std::size_t at = metrics.find("\n" + series + " ");
    return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + series.size() + 2));
  };
  const double refused = count("compactor_serve_reloads_total{result=\"refused\"}"), ok = count("compactor_serve_reloads_total{result=\"ok\"}");
  EXPECT_TRUE(refused == 1 || refused == 2) << metrics;
  EXPECT_TRUE(ok == 1 || ok == 2) << metrics;
  EXPECT_EQ(serve.stop(), 0);
  EXPECT_NE(serve.stderr_text().find("compactor serve: drained"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Serve, SigtermDrainsTheRequestInFlightThenExits) {
  fs::path dir = fresh_dir("drain");
  const std::string body = R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  std::promise<void> release;
  auto gate = release.get_future().share();
  ScriptedResponse slow{200, {}, test::anthropic_reply("finished")};
  slow.before_answer = [gate] { gate.wait_for(std::chrono::seconds(30)); };
  LoopbackHttpServer upstream({slow});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  auto in_flight = std::async(std::launch::async, [&] { return call(serve.port(), "POST", "/v1/messages", body); });
  for (int i = 0; i < 3000 && upstream.requests().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(upstream.requests().size(), 1u);
  serve.signal(SIGTERM);
  // New connections are refused once the server drains; the request in flight still completes.
  for (int i = 0; i < 3000; ++i) {
    asio::io_context io;
    tcp::socket probe(io);
    beast::error_code ec;
    probe.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), serve.port()), ec);
    if (ec) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  release.set_value();
  Reply r = in_flight.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, test::anthropic_reply("finished"));
  EXPECT_EQ(serve.stop(), 0);
  EXPECT_NE(serve.stderr_text().find("compactor serve: drained; exiting"), std::string::npos) << serve.stderr_text();
  fs::remove_all(dir);
}

TEST(Serve, AnOpenAiHistoryTheApiWouldRefuseIsForwardedUnchangedWithTheRuleNamed) {
  fs::path dir = fresh_dir("openai-repair");
  // A tool call whose result never came: the API refuses it; the server does not repair it.
  const std::string body =
      R"({"model":"gpt-4o","messages":[{"role":"user","content":"list files"},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{}"}}]},)"
      R"({"role":"user","content":"go on"}]})";
  LoopbackHttpServer upstream({{200, {}, test::openai_reply("ok")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/chat/completions", body, {{"authorization", "Bearer sk-openai-test"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, test::openai_reply("ok"));
  EXPECT_NE(r.headers["x-compactor-warning"].find("pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: call_1"),
            std::string::npos)
      << r.headers["x-compactor-warning"];
  EXPECT_EQ(r.headers["x-compactor-status"], "refused");
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].target, "/v1/chat/completions");
  EXPECT_EQ(upstream.requests()[0].body, body);
  EXPECT_EQ(upstream.requests()[0].headers["authorization"], "Bearer sk-openai-test");
  fs::remove_all(dir);
}

// The session as OpenAI chat messages, each written the way a client might write it (a space
// around the role's colon), and a final user message with escapes a re-serialization would
// rewrite; `items` gets each message's bytes.
std::string openai_body(const Conversation& session, std::vector<std::string>& items, const std::string& extra_fields = "") {
  json::array messages = json::parse(export_openai(session)).as_array();
  for (const auto& m : messages) {
    std::string raw = json::serialize(m);
    EXPECT_EQ(raw.rfind(R"({"role":)", 0), 0u) << raw;
    items.push_back(R"({ "role" : )" + raw.substr(8));
  }
  items.push_back(R"({"role":"user","content":"caf\u00e9 \/ go on"})");
  std::string body = R"({"model": "gpt-4o", "temperature": 1.0,)" + extra_fields + R"( "messages" : [)";
  for (std::size_t i = 0; i < items.size(); ++i) body += (i ? ",\n  " : "") + items[i];
  return body + "] }";
}

// Boost.JSON's default of 32 levels made a request nested deeper (here a field 40 levels deep
// beside the messages) "not an OpenAI chat request" and refused; it is read as the importer
// reads it now.
TEST(Serve, AnOpenAiRequestNestedDeeperThan32LevelsIsRead) {
  fs::path dir = fresh_dir("openai-deep");
  std::string deep = "{}";
  for (int i = 0; i < 40; ++i) deep = "{\"a\":" + deep + "}";
  const std::string body = R"({"model":"gpt-4o","metadata":)" + deep + R"(,"messages":[{"role":"user","content":"hi"}]})";
  LoopbackHttpServer upstream({{200, {}, test::openai_reply("ok")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "unchanged") << r.headers["x-compactor-warning"];
  EXPECT_EQ(r.headers.count("x-compactor-warning"), 0u) << r.headers["x-compactor-warning"];
  ASSERT_EQ(upstream.requests().size(), 1u);
  EXPECT_EQ(upstream.requests()[0].body, body);
  fs::remove_all(dir);
}

TEST(Serve, OnTheOpenAiRouteUntouchedMessagesGoOutAsTheClientsOwnBytes) {
  fs::path dir = fresh_dir("openai-bytes");
  Conversation session = test::load_or_die(test::data_path(kSession));
  std::vector<std::string> items;
  const std::string body = openai_body(session, items);
  LoopbackHttpServer upstream({{200, {}, test::openai_reply("ok")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted");
  ASSERT_EQ(upstream.requests().size(), 1u);
  const std::string sent = upstream.requests()[0].body;
  EXPECT_LT(sent.size(), body.size() / 2);
  // The fields around the messages are the client's bytes (1.0 stays 1.0).
  EXPECT_EQ(sent.rfind(R"({"model": "gpt-4o", "temperature": 1.0, "messages" : [)", 0), 0u) << sent.substr(0, 80);
  EXPECT_EQ(sent.substr(sent.size() - 3), "] }");
  // Every forwarded message equal in value to one of the client's is that message's exact bytes.
  std::vector<json::value> originals;
  for (const auto& item : items) originals.push_back(json::parse(item));
  std::size_t untouched = 0;
  const json::value forwarded = json::parse(sent);
  for (const auto& m : forwarded.at("messages").as_array()) {
    auto same = std::find(originals.begin(), originals.end(), m);
    if (same == originals.end()) continue;
    ++untouched;
    EXPECT_NE(sent.find(items[static_cast<std::size_t>(same - originals.begin())]), std::string::npos)
        << "re-serialized: " << json::serialize(m);
  }
  EXPECT_GE(untouched, 2u);  // the newest exchange at least
  EXPECT_NE(sent.find(R"("caf\u00e9 \/ go on")"), std::string::npos);
  // What went out imports without a repair.
  auto imported = import_openai(json::serialize(json::parse(sent).at("messages")), "sent");
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_TRUE(imported->report.repairs.empty());
  fs::remove_all(dir);
}

TEST(Serve, AContextLengthExceededRefusalOnTheOpenAiRouteRunsOnPromptTooLongAndRetriesOnce) {
  fs::path dir = fresh_dir("openai-ptl");
  Conversation session = test::load_or_die(test::data_path(kSession));
  std::vector<std::string> items;
  const std::string body = openai_body(session, items);
  const std::string refusal =
      R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",)"
      R"("type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})";
  const std::string pipeline = "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                               "on_prompt_too_long:\n  - stage: reactive_compact\n    params: {keep_messages: 5}\n";
  {
    LoopbackHttpServer upstream({{400, {}, refusal}, {200, {}, test::openai_reply("ok")}});
    ServeProcess serve(dir, write_config(dir, "", "c.yaml", pipeline), upstream.base_url());
    Reply r = call(serve.port(), "POST", "/v1/chat/completions", body, {{"authorization", "Bearer sk-openai-test"}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, test::openai_reply("ok"));
    EXPECT_EQ(r.headers["x-compactor-status"], "retried");
    auto got = upstream.requests();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].body, body);  // nothing to do before the call
    EXPECT_LT(got[1].body.size(), got[0].body.size() / 2);
    EXPECT_EQ(got[1].headers["authorization"], "Bearer sk-openai-test");
    auto imported = import_openai(json::serialize(json::parse(got[1].body).at("messages")), "retry");
    ASSERT_TRUE(imported) << imported.error().message;
    EXPECT_TRUE(imported->report.repairs.empty());
    EXPECT_NE(got[1].body.find(R"("caf\u00e9 \/ go on")"), std::string::npos);
  }
  {
    // A second refusal goes back to the client as the upstream sent it (a fresh archive: no state).
    fs::create_directories(dir / "second");
    dir = dir / "second";
    LoopbackHttpServer upstream({{400, {{"x-request-id", "req_2"}}, refusal}, {400, {{"x-request-id", "req_3"}}, refusal}});
    ServeProcess serve(dir, write_config(dir, "", "c.yaml", pipeline), upstream.base_url());
    Reply r = call(serve.port(), "POST", "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.body, refusal);
    EXPECT_EQ(r.headers["x-request-id"], "req_3");
    EXPECT_EQ(upstream.requests().size(), 2u);
  }
  fs::remove_all(dir.parent_path());
}

TEST(Serve, TheServeSectionIsValidatedWithLocatedErrors) {
  fs::path dir = fresh_dir("config");
  // A token given where its SHA-256 belongs: refused without repeating it (the line reaches logs).
  const std::string token = "cpt_" + std::string(64, 'a');
  write_config(dir, "serve:\n  listen: 127.0.0.1\n  upstreams: {anthropic: ftp://x}\n  max_queued: 0\n  on_failure: drop\n  port: 1\n"
                    "  clients:\n    - {name: alice, token_sha256: " + token + "}\n");
  auto r = test::run_cli({"validate", "--config", "c.yaml"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find(token.substr(0, 12)), std::string::npos) << r.err;
  for (const char* line : {"c.yaml:22:3: serve.port: unknown key", "c.yaml:18:11: serve.listen: expected HOST:PORT",
                           "c.yaml:24:35: serve.clients[0].token_sha256: expected 64 lowercase hex digits",
                           "this is a token itself, which never goes in a config",
                           "c.yaml:19:26: serve.upstreams.anthropic: expected an http:// or https:// URL, got \"ftp://x\"",
                           "c.yaml:20:15: serve.max_queued: expected an integer from 1 to 1000000",
                           "c.yaml:21:15: serve.on_failure: expected one of"})
    EXPECT_NE(r.err.find(line), std::string::npos) << line << "\n" << r.err;
  fs::remove_all(dir);
}

// What loads but exposes more than it should is said by validate, with its place: a listener
// beyond loopback with no client tokens, plain http to another machine, and a relative archive
// folder an MCP client started elsewhere would not find.
TEST(Serve, ValidateWarnsAboutAnExposedListenerPlainHttpAndARelativeArchiveForMcp) {
  fs::path dir = fresh_dir("warnings");
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\n"
                                << "archive: {dir: archive, restore_via: mcp}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\npipeline:\n  - stage: snip\n"
                                << "serve:\n  listen: 0.0.0.0:8088\n  upstreams: {openai: http://10.1.2.3:4000, anthropic: http://127.0.0.1:9}\n";
  auto r = test::run_cli({"validate", "--config", "c.yaml"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string all = r.out + r.err;
  for (const char* line : {"c.yaml:8:11: serve.listen: \"0.0.0.0:8088\" is beyond loopback and serve.clients names no client",
                           "c.yaml:9:23: serve.upstreams.openai: \"http://10.1.2.3:4000\" is plain http to another machine",
                           "c.yaml:3:16: archive.dir: \"archive\" is relative while archive.restore_via is mcp"})
    EXPECT_NE(all.find(line), std::string::npos) << line << "\n" << all;
  EXPECT_EQ(all.find("http://127.0.0.1:9\" is plain http"), std::string::npos) << "loopback over http is fine: " << all;
  fs::remove_all(dir);
}

// Claude Code's requests: `role: "system"` entries inside messages and top-level fields Compactor
// does not know. The entries go out verbatim and in order, the other fields as they came.
TEST(Serve, ClaudeCodesSystemEntriesAreKeptInPlaceAndUnknownFieldsPassThrough) {
  fs::path dir = fresh_dir("claude-code");
  Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string early = R"({"role":"system","content":"Available agent types: general-purpose, Explore."})";
  const std::string late = R"({"role":"system","content":[{"type":"text","text":"The user switched to plan mode."}]})";
  std::string body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":2000},)"
                     R"("context_management":{"edits":[{"type":"clear_thinking_20251015"}]},"output_config":{"effort":"high"},"messages":[)";
  const std::size_t late_at = session.size() - 2;  // before the newest exchange (the protected tail)
  for (std::size_t i = 0; i < session.size(); ++i) {
    if (i == 1) body += early + ",";
    if (i == late_at) body += late + ",";
    body += std::string(session[i].raw()) + (i + 1 < session.size() ? "," : "");
  }
  body += "]}";
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("ok")}});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  Reply r = call(serve.port(), "POST", "/v1/messages?beta=true", body);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-compactor-status"], "compacted");
  ASSERT_EQ(upstream.requests().size(), 1u);
  json::object sent = json::parse(upstream.requests()[0].body).as_object();
  EXPECT_EQ(sent.at("thinking"), json::parse(R"({"type":"enabled","budget_tokens":2000})"));
  EXPECT_EQ(sent.at("context_management"), json::parse(R"({"edits":[{"type":"clear_thinking_20251015"}]})"));
  EXPECT_EQ(sent.at("output_config"), json::parse(R"({"effort":"high"})"));
  json::array& messages = sent.at("messages").as_array();
  EXPECT_LT(messages.size(), session.size());
  std::vector<std::size_t> system_at;
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (messages[i].at("role") == "system") system_at.push_back(i);
  ASSERT_EQ(system_at.size(), 2u);
  EXPECT_EQ(messages[system_at[0]], json::parse(early));
  EXPECT_EQ(messages[system_at[1]], json::parse(late));
  // The summary took everything before the newest exchange: the early entry follows it, and
  // the late one cannot sit next to the early one (the API refuses two entries together), so it
  // goes to the next place the API accepts, after the newest results, at the end.
  EXPECT_EQ(system_at[0], 1u);
  EXPECT_EQ(system_at[1], messages.size() - 1);
  EXPECT_EQ(json::serialize(messages[messages.size() - 2]), json::serialize(json::parse(session[session.size() - 1].raw())));
  // The forwarded body, system entries and all, passes every checker.
  std::ofstream(dir / "sent.json") << upstream.requests()[0].body;
  std::string err;
  EXPECT_EQ(check_file(dir / "sent.json", &err), 0) << err;
  fs::remove_all(dir);
}

// Two calls through a fresh server with `config`: the first compacts, the second extends it by
// `added` messages and must continue from what was sent (a state hit, the first forwarded body's
// messages as its prefix, and a body that passes the checkers). Returns both forwarded bodies.
std::pair<std::string, std::string> two_calls_that_continue(const fs::path& dir, const std::string& config,
                                                            const std::string& first, const std::string& second,
                                                            std::size_t added) {
  LoopbackHttpServer upstream({{200, {}, test::anthropic_reply("ok")}, {200, {}, test::anthropic_reply("ok")}});
  ServeProcess serve(dir, config, upstream.base_url());
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", first).headers["x-compactor-status"], "compacted");
  EXPECT_EQ(call(serve.port(), "POST", "/v1/messages", second).status, 200);
  auto got = upstream.requests();
  EXPECT_EQ(got.size(), 2u);
  if (got.size() != 2) return {};
  std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("compactor_serve_state_total{result=\"hit\"} 1"), std::string::npos) << metrics;
  const json::array sent1 = json::parse(got[0].body).at("messages").as_array();
  const json::array sent2 = json::parse(got[1].body).at("messages").as_array();
  EXPECT_EQ(sent2.size(), sent1.size() + added);
  for (std::size_t i = 0; i < sent1.size() && i < sent2.size(); ++i) EXPECT_EQ(sent2[i], sent1[i]) << "messages." << i;
  std::ofstream(dir / "sent2.json") << got[1].body;
  std::string err;
  EXPECT_EQ(check_file(dir / "sent2.json", &err), 0) << err;
  return {got[0].body, got[1].body};
}

// Continuity with system entries: the next call (the client's uncompacted history, an answer, a
// new prompt and a new entry) continues from the stored compacted history, which holds the
// entries at their places: the second forwarded body starts with the first one's messages,
// entries included, and passes the checkers.
TEST(Serve, SystemEntriesAreInTheStoredHistoryAndTheNextCallContinuesFromIt) {
  fs::path dir = fresh_dir("claude-code-continuity");
  Conversation session = test::load_or_die(test::data_path(kSession));
  const std::vector<std::string> entries = {
      R"({"role":"system","content":"Available agent types: general-purpose, Explore."})",
      R"({"role":"system","content":[{"type":"text","text":"The user switched to plan mode."}]})",
      R"({"role":"system","content":"Token budget: 500 left."})"};
  std::string messages;
  for (std::size_t i = 0; i < session.size(); ++i) {
    if (i == 1) messages += entries[0] + ",";
    if (i == session.size() - 2) messages += entries[1] + ",";
    messages += std::string(session[i].raw()) + (i + 1 < session.size() ? "," : "");
  }
  const std::string head = R"({"model":"claude-opus-4-8","max_tokens":1024,"messages":[)";
  const std::string first = head + messages + "]}";
  const std::string second = head + messages + R"(,{"role":"assistant","content":"Read them all."},)" +
                             R"({"role":"user","content":"now summarize them"},)" + entries[2] + "]}";
  const std::string body2 = two_calls_that_continue(dir, write_config(dir, ""), first, second, 3).second;
  std::size_t from = 0;
  for (const std::string& e : entries) {
    std::size_t at = body2.find(e, from);
    EXPECT_NE(at, std::string::npos) << "missing or out of order: " << e;
    if (at != std::string::npos) from = at + e.size();
  }
}

// A summary that leaves fewer places than entries sends some of them joined (one entry, their
// text blocks in order). The stored history must say which share a slot: the next call is a
// state hit and continues from exactly what was sent (a user trial found the state written with
// the entries side by side, unreadable, so every later call ran from an older prefix).
TEST(Serve, JoinedSystemEntriesAreStoredAndTheNextCallContinuesFromThem) {
  fs::path dir = fresh_dir("joined-entries");
  Conversation session = test::load_or_die(test::data_path(kSession));
  std::string messages;
  std::size_t entries = 0;
  for (std::size_t i = 0; i < session.size(); ++i) {
    messages += std::string(session[i].raw());
    // An entry after every user message that an assistant message follows (where the API accepts one).
    if (session[i].role() == Role::user && i + 1 < session.size() && session[i + 1].role() == Role::assistant) {
      messages += R"(,{"role":"system","content":"note )" + std::to_string(++entries) + R"("})";
    }
    if (i + 1 < session.size()) messages += ",";
  }
  ASSERT_GE(entries, 4u);
  const std::string head = R"({"model":"claude-opus-4-8","max_tokens":1024,"messages":[)";
  const std::string first = head + messages + "]}";
  const std::string second = head + messages + R"(,{"role":"assistant","content":"Done."},{"role":"user","content":"and now?"}]})";
  const std::string config = write_config(dir, "recent: {exchanges: 1}\n", "c.yaml",
                                          "pipeline:\n  - stage: summarize\n    params: {max_chars: 1000}\n");
  const json::value body1 = json::parse(two_calls_that_continue(dir, config, first, second, 2).first);
  const json::array& sent1 = body1.at("messages").as_array();
  // Some entries were joined: fewer system entries than were sent to the server, every note kept.
  std::size_t system_entries = 0;
  std::string notes;
  for (const auto& m : sent1) {
    if (m.at("role") != "system") continue;
    ++system_entries;
    const json::value& content = m.at("content");
    if (content.is_string()) {
      notes += std::string(content.as_string()) + ";";
    } else {
      for (const auto& b : content.as_array()) notes += std::string(b.at("text").as_string()) + ";";
    }
  }
  EXPECT_LT(system_entries, entries);
  std::string expected_notes;
  for (std::size_t k = 1; k <= entries; ++k) expected_notes += "note " + std::to_string(k) + ";";
  EXPECT_EQ(notes, expected_notes);
}

// Continuity: `session` replayed call by call, alternating between two servers that share one
// archive folder; every call's forwarded messages must equal the bench replay's for the config
// (cache_control aside), carry the client's moving breakpoint, and pass the checkers.
// Where the replicas keep state and blobs: one archive folder they all share (in `dir`), or a
// Redis server, each replica then in a folder of its own (dir/r0, dir/r1, …) sharing nothing else.
struct Replicas {
  std::size_t count = 2;
  const test::RedisServer* redis = nullptr;
};

// Every receipt the replicas forwarded restores, byte for byte as the bench archived it, through
// `compactor restore --config` from a folder with no archive (a laptop with the same config) and
// through /mcp on a replica that did not write it.
void expect_receipts_restore_anywhere(const fs::path& dir, const std::string& name, const std::string& config,
                                      const std::vector<test::RecordedRequest>& got, std::vector<std::unique_ptr<ServeProcess>>& servers) {
  fs::create_directories(dir / "laptop");
  fs::copy_file(dir / config, dir / "laptop" / config, fs::copy_options::overwrite_existing);
  std::set<std::string> seen;
  for (std::size_t c = 0; c < got.size(); ++c)
    for (const std::string& receipt : find_receipts(got[c].body)) {
      if (!seen.insert(receipt).second) continue;
      auto expected = restore_blob((dir / "bench-archive").string(), receipt);
      ASSERT_TRUE(expected) << name << " " << receipt << ": " << expected.error().message;
      auto restored = test::run_cli({"restore", receipt, "--config", (dir / "laptop" / config).string()});
      EXPECT_EQ(restored.exit_code, 0) << name << " " << receipt << ": " << restored.err;
      EXPECT_TRUE(restored.out == *expected) << name << " " << receipt << ": restored bytes differ";
      const std::string rpc = json::serialize(json::object{
          {"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
          {"params", json::object{{"name", "restore"}, {"arguments", json::object{{"receipt", receipt}, {"max_chars", 100000}}}}}});
      Reply r = call(servers[(c + 1) % servers.size()]->port(), "POST", "/mcp", rpc, {{"mcp-protocol-version", "2025-06-18"}});
      ASSERT_EQ(r.status, 200) << r.body;
      const json::object result = json::parse(r.body).at("result").as_object();
      EXPECT_FALSE(result.at("isError").as_bool()) << name << " " << receipt << ": " << r.body.substr(0, 300);
      auto view = mcp::BlobView::of(*expected);
      ASSERT_TRUE(view);
      const std::string page = std::string(result.at("content").as_array().at(0).at("text").as_string());
      EXPECT_EQ(page.substr(0, 1000), view->text().substr(0, std::min<std::size_t>(1000, page.size()))) << name << " " << receipt;
    }
  std::printf("%s: %zu receipts restored from a folder with no archive and through /mcp on another replica\n", name.c_str(), seen.size());
}

// The replicas, a, b, c…: in `dir` itself on a shared folder, each in dir/<name> on Redis.
std::vector<std::unique_ptr<ServeProcess>> start_replicas(const fs::path& dir, const std::string& config,
                                                          const LoopbackHttpServer& upstream, Replicas replicas) {
  std::vector<std::unique_ptr<ServeProcess>> servers;
  for (std::size_t r = 0; r < replicas.count; ++r) {
    const std::string label(1, static_cast<char>('a' + r));
    if (replicas.redis == nullptr) {
      servers.push_back(std::make_unique<ServeProcess>(dir, config, upstream.base_url(), label));
      continue;
    }
    fs::create_directories(dir / label);
    servers.push_back(std::make_unique<ServeProcess>(dir / label, "../" + config, upstream.base_url(), label));
  }
  return servers;
}

void replay_through_servers(const fs::path& dir, const std::string& name, const Conversation& session, std::size_t& compacted,
                            Replicas replicas = {}) {
  const std::string config = write_config(dir, replicas.redis != nullptr ? replicas.redis->store_yaml() : "");
  auto loaded = load_pipeline_config((dir / config).string());
  ASSERT_TRUE(loaded.config) << (loaded.errors.empty() ? "" : loaded.errors.front());
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  ASSERT_TRUE(pipeline);
  bench::ReplaySetup setup;
  setup.session = name;
  setup.archive_dir = (dir / "bench-archive").string();
  setup.window = 1u << 30;
  std::vector<std::string> expected;
  setup.on_call = [&](std::size_t, const Conversation& sent) {
    std::string messages;
    for (const auto& m : sent.messages()) messages += normalized(*m);
    expected.push_back(messages);
  };
  auto log = make_stderr_logger("");
  bench::SessionReplay replay = bench::replay_session(session, &*pipeline, setup, *log);
  ASSERT_TRUE(replay.errors.empty()) << name << ": " << replay.errors.front();

  std::vector<ScriptedResponse> script(expected.size(), ScriptedResponse{200, {}, test::anthropic_reply("ok")});
  LoopbackHttpServer upstream(script);
  std::vector<std::unique_ptr<ServeProcess>> servers = start_replicas(dir, config, upstream, replicas);
  std::size_t call_index = 0;
  std::vector<bool> marked;
  for (std::size_t i = 1; i < session.size(); ++i) {
    if (session[i].role() != Role::assistant) continue;
    // The agent sends its whole, uncompacted history; cache_control moves to the newest message.
    std::string body = request_body(session, i, false, false, true);
    marked.push_back(body.find("\"cache_control\"") != std::string::npos);
    Reply r = call(servers[call_index % servers.size()]->port(), "POST", "/v1/messages", body);
    ASSERT_EQ(r.status, 200) << name << " call " << call_index + 1;
    if (r.headers["x-compactor-status"] == "compacted") ++compacted;
    ++call_index;
  }
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), expected.size()) << name;
  for (std::size_t c = 0; c < got.size(); ++c) {
    ReadOptions options;
    auto sent = read_conversation(got[c].body, options);
    ASSERT_TRUE(sent) << name << " call " << c + 1 << ": " << sent.error().message;
    std::string messages;
    for (const auto& m : sent->messages()) messages += normalized(*m);
    EXPECT_EQ(messages, expected[c]) << name << " call " << c + 1 << " differs from the bench replay";
    // The client's breakpoint is back on the newest message (never touched: the protected tail).
    if (marked[c]) {
      EXPECT_NE(sent->messages().back()->raw().find("\"cache_control\""), std::string_view::npos) << name << " call " << c + 1;
    }
    std::ofstream(dir / "sent.json") << got[c].body;
    std::string err;
    EXPECT_EQ(check_file(dir / "sent.json", &err), 0) << name << " call " << c + 1 << ": " << err;
  }
  std::string metrics_b = call(servers[1]->port(), "GET", "/metrics").body;
  if (got.size() > 2) {
    EXPECT_NE(metrics_b.find("compactor_serve_state_total{result=\"hit\"}"), std::string::npos) << metrics_b;
  }
  if (replicas.redis != nullptr) {
    EXPECT_EQ(metrics_b.find("compactor_serve_store_errors_total{op=\"state_put\"} 0"), metrics_b.find("compactor_serve_store_errors_total{op=\"state_put\"}"));
    expect_receipts_restore_anywhere(dir, name, config, got, servers);
  }
}

void replay_through_two_servers(const fs::path& dir, const std::string& name, const Conversation& session, std::size_t& compacted) {
  replay_through_servers(dir, name, session, compacted);
}

TEST(Serve, CallByCallOutputsEqualTheBenchReplayAcrossTwoServersSharingAnArchive) {
  fs::path dir = fresh_dir("continuity");
  const std::string session_file = "cc-18240050-3ee8-41cd-a89a-0a5c4b709607.json";
  std::size_t compacted = 0;
  replay_through_two_servers(dir, session_file, test::load_or_die(test::data_path(session_file)), compacted);
  EXPECT_GT(compacted, 0u);
  fs::remove_all(dir);
}

// The same with three replicas that share only a Redis server (each its own archive folder):
// calls alternate across them and still equal the bench replay; every receipt restores from a
// folder with no archive and through /mcp on a replica that did not write it.
TEST(Serve, CallByCallOutputsEqualTheBenchReplayAcrossThreeReplicasSharingOnlyRedis) {
  test::RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  fs::path dir = fresh_dir("replicas-redis");
  std::size_t compacted = 0;
  const std::string session_file = "cc-18240050-3ee8-41cd-a89a-0a5c4b709607.json";
  replay_through_servers(dir, session_file, test::load_or_die(test::data_path(session_file)), compacted, Replicas{3, &redis});
  EXPECT_GT(compacted, 0u);
  EXPECT_GT(redis.cli({"ZCARD", "{compactor}:blobs"}), "0\n");  // the receipts restored were Redis's
  EXPECT_FALSE(fs::exists(dir / "a" / "archive" / "pack"));
  fs::remove_all(dir);
}

// Redis killed (kill -9) mid-conversation: every call is still answered (forwarded as it came, or
// compacted without stored state), the failures are counted; once Redis is back from its
// append-only file, the conversation continues from the state stored before the kill.
TEST(Serve, RedisKilledMidRunEveryCallIsAnsweredAndStateComesBackFromItsAppendOnlyFile) {
  test::RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  fs::path dir = fresh_dir("redis-killed");
  const Conversation session = test::load_or_die(test::data_path(kSession));
  const std::string config = write_config(dir, redis.store_yaml("timeout_ms: 300"));
  std::vector<std::size_t> calls;
  for (std::size_t i = 1; i < session.size(); ++i)
    if (session[i].role() == Role::assistant) calls.push_back(i);
  ASSERT_GE(calls.size(), 8u);
  LoopbackHttpServer upstream(std::vector<ScriptedResponse>(8, ScriptedResponse{200, {}, test::anthropic_reply("ok")}));
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  ServeProcess a(dir / "a", "../" + config, upstream.base_url(), "a"), b(dir / "b", "../" + config, upstream.base_url(), "b");
  auto send = [&](std::size_t k) {
    Reply r = call((k % 2 == 0 ? a : b).port(), "POST", "/v1/messages", request_body(session, calls[calls.size() - 8 + k]));
    EXPECT_EQ(r.status, 200) << "call " << k << ": " << r.body;
    return r;
  };
  for (std::size_t k = 0; k < 3; ++k) send(k);
  redis.kill_hard();
  for (std::size_t k = 3; k < 5; ++k) {
    Reply r = send(k);
    EXPECT_NE(r.headers["x-compactor-status"], "compacted") << "call " << k << ": compacted with no store to archive in";
  }
  auto errors = [](const std::string& metrics) {
    std::size_t n = 0;
    for (const char* op : {"state_get", "state_put", "blobs_put"}) {
      const std::string line = std::string("compactor_serve_store_errors_total{op=\"") + op + "\"} ";
      const std::size_t at = metrics.find(line);
      if (at != std::string::npos) n += std::stoul(metrics.substr(at + line.size()));
    }
    return n;
  };
  EXPECT_GT(errors(call(a.port(), "GET", "/metrics").body) + errors(call(b.port(), "GET", "/metrics").body), 0u);
  const std::string logs = a.stderr_text() + b.stderr_text();
  EXPECT_NE(logs.find("the store failed"), std::string::npos) << logs;
  // A call forwarded for want of its blobs says so, naming the blobs' error (not the state read's).
  EXPECT_NE(logs.find("the store could not archive what compaction would remove, forwarded as it came: archive: "), std::string::npos)
      << logs;
  ASSERT_TRUE(redis.restart());
  auto hits = [&](ServeProcess& s) {
    const std::string metrics = call(s.port(), "GET", "/metrics").body;
    const std::string line = "compactor_serve_state_total{result=\"hit\"} ";
    const std::size_t at = metrics.find(line);
    return at == std::string::npos ? 0ul : std::stoul(metrics.substr(at + line.size()));
  };
  const std::size_t before = hits(a) + hits(b);
  for (std::size_t k = 5; k < 8; ++k) send(k);
  EXPECT_GT(hits(a) + hits(b), before) << "no state hit after Redis came back";
  for (const auto& request : upstream.requests()) {
    std::ofstream(dir / "sent.json") << request.body;
    EXPECT_EQ(check_file(dir / "sent.json"), 0);
  }
  fs::remove_all(dir);
}

// The same over every session of a corpus folder named by COMPACTOR_SERVE_CORPUS (a manual check,
// skipped in ctest): each file is imported as `compactor import` does.
TEST(Serve, ACorpusFolderReplaysThroughTwoServersLikeTheBench) {
  const char* corpus = std::getenv("COMPACTOR_SERVE_CORPUS");
  if (corpus == nullptr) GTEST_SKIP() << "set COMPACTOR_SERVE_CORPUS to a folder of sessions";
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(corpus))
    if (e.is_regular_file() && (e.path().extension() == ".jsonl" || e.path().extension() == ".json" || e.path().extension() == ".traj")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::size_t sessions = 0, compacted = 0;
  // COMPACTOR_SERVE_CORPUS_REDIS=1: three replicas sharing only a Redis server instead.
  std::optional<test::RedisServer> redis;
  if (std::getenv("COMPACTOR_SERVE_CORPUS_REDIS") != nullptr) redis.emplace();
  for (const auto& f : files) {
    fs::path dir = fresh_dir("corpus");
    auto imported = test::run_cli({"import", "--input", f.string(), "--output", (dir / "session.json").string()});
    if (imported.exit_code != 0 || !fs::exists(dir / "session.json")) {
      // A file that holds no message is reported EMPTY (docs/import-and-check.md): no call to
      // replay, as a session of one message. Any other failure to import fails the check.
      if (imported.out.rfind("EMPTY ", 0) == 0) std::printf("corpus: %s holds no message: no call to replay\n", f.filename().c_str());
      else ADD_FAILURE() << "corpus: " << f << " not imported (exit " << imported.exit_code << "): " << imported.out << imported.err;
      continue;
    }
    Conversation session = test::load_or_die((dir / "session.json").string());
    if (session.size() < 2) {
      std::printf("corpus: %s has %zu messages: no call to replay\n", f.filename().c_str(), session.size());
      continue;
    }
    if (redis) replay_through_servers(dir, f.filename().string(), session, compacted, Replicas{3, &*redis});
    else replay_through_two_servers(dir, f.filename().string(), session, compacted);
    ++sessions;
    fs::remove_all(dir);
  }
  std::printf("corpus: %zu sessions replayed through %s, %zu compacted calls\n", sessions,
              redis ? "three replicas sharing only Redis" : "two servers sharing a folder", compacted);
  EXPECT_GT(sessions, 0u);
}

// The same for OpenAI histories through the Chat Completions route: `history` (a messages array
// as an agent keeps it) is replayed by the bench as the Chat adapter reads it, and sent call by
// call through two servers sharing an archive; every call's forwarded messages, read back by the
// adapter, must equal the bench replay's. The calls are found in the Chat array by the API's own
// shape (a run of tool messages is one answer; system messages are not turns), not by the adapter.
void replay_chat_through_two_servers(const fs::path& dir, const std::string& name, const json::array& history,
                                     std::size_t& compacted, std::uint64_t limit = 50000, Replicas replicas = {}) {
  std::string config = write_config(dir, replicas.redis != nullptr ? replicas.redis->store_yaml() : "");
  if (limit != 50000) {
    std::string text = test::read_file((dir / config).string());
    text.replace(text.find("limit: 50000, target: 40000"), 27, "limit: " + std::to_string(limit) + ", target: " + std::to_string(limit * 4 / 5));
    std::ofstream(dir / config) << text;
  }
  auto loaded = load_pipeline_config((dir / config).string());
  ASSERT_TRUE(loaded.config) << (loaded.errors.empty() ? "" : loaded.errors.front());
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  ASSERT_TRUE(pipeline);
  const std::string whole = json::serialize(json::object{{"model", "m"}, {"messages", history}});
  auto read = wire::openai_chat().read(whole, name);
  ASSERT_TRUE(read) << name << ": " << read.error().message;
  const std::vector<CheckerPtr> rules = wire::openai_chat().rules();
  bench::ReplaySetup setup;
  setup.session = name;
  setup.archive_dir = (dir / "bench-archive").string();
  setup.window = 1u << 30;
  setup.rules = &rules;
  std::vector<std::string> expected;
  setup.on_call = [&](std::size_t, const Conversation& sent) {
    std::string messages;
    for (const auto& m : sent.messages()) messages += normalized(*m);
    expected.push_back(messages);
  };
  auto log = make_stderr_logger("");
  bench::SessionReplay replay = bench::replay_session((*read)->conversation(), &*pipeline, setup, *log);
  ASSERT_TRUE(replay.errors.empty()) << name << ": " << replay.errors.front();

  // Where each turn starts in the Chat array; a call is made before each assistant turn.
  std::vector<std::size_t> calls;
  bool head = true, in_tools = false;
  std::size_t turn = 0;
  for (std::size_t j = 0; j < history.size(); ++j) {
    const std::string_view role = history[j].at("role").as_string();
    if (role == "system" || role == "developer") {
      in_tools = false;
      continue;
    }
    head = false;
    if (role == "tool" && in_tools) continue;
    in_tools = role == "tool";
    if (role == "assistant" && turn > 0) calls.push_back(j);
    ++turn;
  }
  (void)head;
  ASSERT_EQ(calls.size(), expected.size()) << name;
  std::vector<ScriptedResponse> script(expected.size(), ScriptedResponse{200, {}, test::openai_reply("ok")});
  LoopbackHttpServer upstream(script);
  std::vector<std::unique_ptr<ServeProcess>> servers = start_replicas(dir, config, upstream, replicas);
  for (std::size_t c = 0; c < calls.size(); ++c) {
    json::array prefix(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(calls[c]));
    const std::string body = json::serialize(json::object{{"model", "m"}, {"messages", std::move(prefix)}});
    Reply r = call(servers[c % servers.size()]->port(), "POST", "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << name << " call " << c + 1;
    ASSERT_NE(r.headers["x-compactor-status"], "refused") << name << " call " << c + 1 << ": " << r.headers["x-compactor-warning"];
    ASSERT_NE(r.headers["x-compactor-status"], "failed") << name << " call " << c + 1 << ": " << r.headers["x-compactor-warning"];
    // Compacted within the budget, or compacted and still over it (the status says which).
    const std::string status = r.headers["x-compactor-status"];
    if (status == "compacted" || (status == "over_budget" && upstream.requests().back().body != body)) ++compacted;
  }
  auto got = upstream.requests();
  ASSERT_EQ(got.size(), expected.size()) << name;
  for (std::size_t c = 0; c < got.size(); ++c) {
    auto sent = wire::openai_chat().read(got[c].body, name);
    ASSERT_TRUE(sent) << name << " call " << c + 1 << ": " << sent.error().message;
    std::string messages;
    for (const auto& m : (*sent)->conversation().messages()) messages += normalized(*m);
    EXPECT_EQ(messages, expected[c]) << name << " call " << c + 1 << " differs from the bench replay";
  }
  if (replicas.redis != nullptr) expect_receipts_restore_anywhere(dir, name, config, got, servers);
}

TEST(Serve, OpenAiHistoriesReplayThroughTheChatRouteLikeTheBench) {
  // A SWE-agent trajectory of tests/data, as the OpenAI messages an agent sends (import --output-format openai).
  fs::path dir = fresh_dir("chat-continuity");
  const std::string traj = test::data_path("openai/function_calling_simple.traj");
  auto exported = test::run_cli({"import", "--input", traj, "--output-format", "openai", "--output", "-"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::size_t compacted = 0;
  // A budget the trajectory's middle calls cross.
  replay_chat_through_two_servers(dir, "function_calling_simple", json::parse(exported.out).as_array(), compacted, 4000);
  EXPECT_GT(compacted, 0u);
  fs::remove_all(dir);
}

// The same over every OpenAI trajectory (.traj) of the folder COMPACTOR_SERVE_CORPUS names (a
// corpus-wide check .ci/run makes; skipped in ctest).
TEST(Serve, ACorpusFolderOfOpenAiHistoriesReplaysThroughTheChatRouteLikeTheBench) {
  const char* corpus = std::getenv("COMPACTOR_SERVE_CORPUS");
  if (corpus == nullptr) GTEST_SKIP() << "set COMPACTOR_SERVE_CORPUS to a folder of sessions";
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(corpus))
    if (e.is_regular_file() && e.path().extension() == ".traj") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::size_t sessions = 0, compacted = 0;
  std::optional<test::RedisServer> redis;  // COMPACTOR_SERVE_CORPUS_REDIS=1: three replicas on Redis
  if (std::getenv("COMPACTOR_SERVE_CORPUS_REDIS") != nullptr) redis.emplace();
  for (const auto& f : files) {
    fs::path dir = fresh_dir("chat-corpus");
    auto exported = test::run_cli({"import", "--input", f.string(), "--output-format", "openai", "--output", "-"});
    if (exported.exit_code != 0) {
      ADD_FAILURE() << "corpus: " << f << " not imported (exit " << exported.exit_code << "): " << exported.err;
      continue;
    }
    // A budget these trajectories cross (most stay under the default 50,000 chars).
    replay_chat_through_two_servers(dir, f.filename().string(), json::parse(exported.out).as_array(), compacted, 20000,
                                    redis ? Replicas{3, &*redis} : Replicas{});
    ++sessions;
    fs::remove_all(dir);
  }
  std::printf("corpus: %zu OpenAI histories replayed through %s' Chat route, %zu compacted calls\n", sessions,
              redis ? "three replicas sharing only Redis" : "two servers sharing a folder", compacted);
  EXPECT_GT(sessions, 0u);
}

// /mcp, the archive's MCP server over Streamable HTTP: the transport's MUSTs, and the bearer
// token beyond loopback.
TEST(Serve, TheMcpEndpointKeepsTheStreamableHttpRules) {
  fs::path dir = fresh_dir("mcp");
  LoopbackHttpServer upstream({});
  ServeProcess serve(dir, write_config(dir, ""), upstream.base_url());
  const std::string init =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
  Reply r = call(serve.port(), "POST", "/mcp", init, {{"accept", "application/json, text/event-stream"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body).at("result").at("protocolVersion"), "2025-06-18");
  const std::string session = r.headers["mcp-session-id"];
  ASSERT_EQ(session.size(), 32u);
  // The session continues; a notification is 202 with no body.
  r = call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
           {{"mcp-session-id", session}, {"mcp-protocol-version", "2025-06-18"}});
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, "");
  r = call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
           {{"mcp-session-id", session}, {"mcp-protocol-version", "2025-06-18"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).at("result").at("tools").as_array().size(), 2u);
  // A reload (SIGHUP, the config unchanged) keeps the session: the client is not sent back to
  // initialize by an operator's edit.
  serve.signal(SIGHUP);
  for (int i = 0; i < 3000 && serve.stderr_text().find("compactor serve: reloaded") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_NE(serve.stderr_text().find("compactor serve: reloaded"), std::string::npos) << serve.stderr_text();
  r = call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
           {{"mcp-session-id", session}, {"mcp-protocol-version", "2025-06-18"}});
  EXPECT_EQ(r.status, 200) << r.body;
  // An unknown session: 404, so the client starts again; an unsupported version: 400; a
  // foreign origin: 403; GET offers no stream: 405; DELETE ends the session.
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":3,"method":"ping"})", {{"mcp-session-id", "nope"}}).status, 404);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":3,"method":"ping"})", {{"mcp-protocol-version", "1999-01-01"}}).status, 400);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":3,"method":"ping"})", {{"origin", "https://evil.example"}}).status, 403);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":3,"method":"ping"})", {{"origin", "http://localhost:3000"}}).status, 200);
  EXPECT_EQ(call(serve.port(), "GET", "/mcp").status, 405);
  EXPECT_EQ(call(serve.port(), "DELETE", "/mcp", "", {{"mcp-session-id", session}}).status, 200);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":4,"method":"ping"})", {{"mcp-session-id", session}}).status, 404);
  // Without a session, a request is served at the version its header names.
  r = call(serve.port(), "POST", "/mcp", R"({"jsonrpc":"2.0","id":5,"method":"ping"})", {{"mcp-protocol-version", "2025-11-25"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).at("result"), json::object{});
  EXPECT_TRUE(upstream.requests().empty());
  fs::remove_all(dir);
}

TEST(Serve, BeyondLoopbackTheMcpEndpointNeedsTheBearerToken) {
  fs::path dir = fresh_dir("mcp-token");
  LoopbackHttpServer upstream({});
  const std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  {
    // No token configured: closed, and said so at start.
    ServeProcess serve(dir, write_config(dir, ""), upstream.base_url(), "open", {}, "0.0.0.0:0");
    EXPECT_EQ(call(serve.port(), "POST", "/mcp", ping).status, 403);
    EXPECT_NE(serve.stderr_text().find("/mcp is closed"), std::string::npos) << serve.stderr_text();
  }
  ServeProcess serve(dir, write_config(dir, "serve: {mcp_token_env: MCP_TEST_TOKEN}\n", "t.yaml"), upstream.base_url(), "token",
                     {{"MCP_TEST_TOKEN", "s3cret-token-value"}}, "0.0.0.0:0");
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", ping).status, 401);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", ping, {{"authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(call(serve.port(), "POST", "/mcp", ping, {{"authorization", "Bearer s3cret-token-value"}}).status, 200);
  serve.stop();
  EXPECT_EQ(serve.stderr_text().find("s3cret-token-value"), std::string::npos) << "the token was logged";
  fs::remove_all(dir);
}

// Every message and part field Chat Completions clients add, on a history a stage edits: through
// serve and through `compactor run`, each comes out where it went in, and the output passes
// `compactor check`.
TEST(Serve, EveryChatFieldSurvivesThroughServeAndRun) {
  fs::path dir = fresh_dir("chat-fields");
  const std::string big(3000, 'r');
  const std::string body =
      R"({"model":"qwen","stream":true,"messages":[{"role":"system","content":"sys"},)"
      R"({"role":"user","name":"alice","content":[{"type":"text","text":"look","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]},)"
      R"({"role":"assistant","content":"","reasoning_content":"think \u00e9","reasoning":"r","reasoning_details":[{"type":"reasoning.encrypted","data":"xyz=="}],"refusal":null,"annotations":[],"audio":{"id":"audio_1"},"tool_calls":[{"id":"call_1","type":"function","index":0,"function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","name":"read_file","content":")" + big + R"("},)"
      R"({"role":"assistant","content":"ok","reasoning_content":"second"},{"role":"user","content":"next"}]})";
  const std::string config = write_config(dir, "", "c.yaml", "pipeline:\n  - stage: micro\n    params: {keep_recent: 0, min_chars: 120}\n");
  auto holds_every_field = [&](const std::string& out, const std::string& where) {
    for (const char* field : {R"("reasoning_content":"think \u00e9")", R"("reasoning":"r")", R"("reasoning_details":[{"type":"reasoning.encrypted","data":"xyz=="}])",
                              R"("refusal":null)", R"("annotations":[])", R"("audio":{"id":"audio_1"})", R"("index":0)", R"("name":"alice")",
                              R"("name":"read_file")", R"("cache_control":{"type":"ephemeral"})", R"({"type":"image_url")", R"({"type":"input_audio")",
                              R"("reasoning_content":"second")"})
      EXPECT_NE(out.find(field), std::string::npos) << where << ": " << field << " is gone";
    EXPECT_EQ(out.find(big), std::string::npos) << where << ": the tool result was not masked";
    std::ofstream(dir / "out.json") << out;
    auto checked = test::run_cli({"check", "--input", (dir / "out.json").string(), "--input-format", "openai"});
    EXPECT_EQ(checked.exit_code, 0) << where << ": " << checked.err;
  };
  {
    LoopbackHttpServer upstream({{200, {}, test::openai_reply("ok")}});
    ServeProcess serve(dir, config, upstream.base_url());
    Reply r = call(serve.port(), "POST", "/v1/chat/completions", body);
    EXPECT_EQ(r.headers["x-compactor-status"], "compacted") << r.headers["x-compactor-warning"];
    ASSERT_EQ(upstream.requests().size(), 1u);
    holds_every_field(upstream.requests()[0].body, "serve");
  }
  std::ofstream(dir / "in.json") << body;
  auto ran = test::run_cli({"run", "--config", (dir / config).string(), "--input", (dir / "in.json").string(), "--output",
                            (dir / "ran.json").string()}, "", dir.string());
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  holds_every_field(test::read_file((dir / "ran.json").string()), "run");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace compactor
