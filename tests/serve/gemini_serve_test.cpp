// `compactor serve` on the Gemini API's routes, against fake upstreams on loopback: the built CLI
// as a separate process, the Gemini upstream given by `serve.upstreams`, the Messages API
// upstream beside it to show nothing of Gemini's goes there. Nothing leaves the machine.
#include "support/loopback_http_server.hpp"
#include "support/serve_process.hpp"
#include "support/test_support.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using test::LoopbackHttpServer;
using test::Reply;
using test::ScriptedResponse;
using test::ServeProcess;
using test::call;

constexpr const char* kHeaderKey = "AIzaSy-header-key-never-logged";
constexpr const char* kQueryKey = "AIzaSy-query-key-never-logged";

// Gemini CLI's shape: the task, then `reads` signed read_file steps with their responses.
std::string gemini_body(int reads, std::size_t size) {
  std::string b = R"({"contents":[{"parts":[{"text":"Read the files one by one."}],"role":"user"})";
  for (int i = 1; i <= reads; ++i) {
    const std::string n = std::to_string(i);
    b += R"(,{"parts":[{"functionCall":{"id":"read_file_)" + n + R"(","args":{"file_path":"/w/f)" + n +
         R"(.txt"},"name":"read_file"},"thoughtSignature":"c2ln)" + n + R"(=="}],"role":"model"})";
    b += R"(,{"parts":[{"functionResponse":{"name":"read_file","response":{"output":")" + std::string(size, 'x') + R"("},"id":"read_file_)" + n +
         R"("}}],"role":"user"})";
  }
  return b + R"(],"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},"tools":[{"functionDeclarations":[{"name":"read_file",)"
             R"("parametersJsonSchema":{"type":"object"}}]}],"generationConfig":{"temperature":1,"thinkingConfig":{"includeThoughts":true}}})";
}

std::string write_config(const fs::path& dir, const std::string& gemini_upstream, const std::string& pipeline) {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 20000, target: 16000}\narchive: {dir: archive}\n"
                                << "plugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\n"
                                << pipeline << "serve:\n  upstreams: {gemini: " << gemini_upstream << "}\n";
  return "c.yaml";
}

constexpr const char* kMicro = "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2, min_chars: 120}\n";

int check(const fs::path& file, std::string& err) {
  auto r = test::run_cli({"check", "--input", file.string(), "--input-format", "gemini"});
  err = r.err;
  return r.exit_code;
}

TEST(ServeGemini, AStreamedCallIsCompactedItsEventsPassAsTheyArriveAndNoKeyIsEverLogged) {
  fs::path dir = test::scratch_folder_until_exit("serve-gemini-stream");
  const std::string first = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Thinking\",\"thought\":true}],\"role\":\"model\"}}]}\r\n\r\n";
  const std::string rest =
      "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"read_file\",\"args\":{}},\"thoughtSignature\":\"bmV3\"}],"
      "\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":5000}}\r\n\r\n";
  // The upstream sends the rest only once the client has the first event: it can only have it
  // if the server passes chunks on as they arrive.
  std::promise<void> client_saw_first;
  auto gate = client_saw_first.get_future().share();
  ScriptedResponse streamed{200, {{"content-type", "text/event-stream"}}, ""};
  streamed.chunks = {first, rest};
  streamed.between_chunks = [gate] { gate.wait_for(std::chrono::seconds(30)); };
  LoopbackHttpServer gemini({streamed});
  LoopbackHttpServer anthropic({});
  ServeProcess serve(dir, write_config(dir, gemini.base_url(), kMicro), anthropic.base_url(), "serve", {{"COMPACTOR_LOG", "debug"}});

  const std::string body = gemini_body(12, 3000);
  const std::string target = std::string("/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse&key=") + kQueryKey;
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), serve.port()));
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set("x-goog-api-key", kHeaderKey);
  req.set("x-goog-api-client", "google-genai-sdk/1.30.0 gl-node/v20.20.2");
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  std::string raw;
  char buf[4096];
  beast::error_code ec;
  while (raw.find("\"thought\":true") == std::string::npos && !ec) raw.append(buf, socket.read_some(asio::buffer(buf), ec));
  ASSERT_NE(raw.find("\"thought\":true"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("finishReason"), std::string::npos) << "the rest came before the upstream sent it";
  client_saw_first.set_value();
  while (!ec) {
    raw.append(buf, socket.read_some(asio::buffer(buf), ec));
    if (raw.size() >= 5 && raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0) break;
  }
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  parser.put(asio::buffer(raw), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(parser.get().result_int(), 200u);
  EXPECT_EQ(parser.get()["x-compactor-status"], "compacted");
  EXPECT_EQ(parser.get().body(), first + rest);

  // Forwarded to the Gemini upstream with the query and the client's headers as they came,
  // compacted under the budget, and still a history the API accepts.
  EXPECT_TRUE(anthropic.requests().empty());
  auto got = gemini.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].target, target);
  EXPECT_EQ(got[0].headers["x-goog-api-key"], kHeaderKey);
  EXPECT_EQ(got[0].headers["x-goog-api-client"], "google-genai-sdk/1.30.0 gl-node/v20.20.2");
  EXPECT_LT(got[0].body.size(), body.size() / 2);
  for (int i = 1; i <= 12; ++i) EXPECT_NE(got[0].body.find("\"thoughtSignature\":\"c2ln" + std::to_string(i) + "==\""), std::string::npos) << i;
  std::ofstream(dir / "sent.json") << got[0].body;
  std::string err;
  EXPECT_EQ(check(dir / "sent.json", err), 0) << err;
  serve.stop();
  const std::string log = serve.stderr_text();
  EXPECT_NE(log.find("serve: POST /v1beta/models/gemini-3.1-pro-preview:streamGenerateContent 200"), std::string::npos) << log;
  EXPECT_EQ(log.find(kHeaderKey), std::string::npos) << "the header key was logged";
  EXPECT_EQ(log.find(kQueryKey), std::string::npos) << "the query key was logged";
  EXPECT_EQ(log.find("key="), std::string::npos) << log;
}

TEST(ServeGemini, ARouterCallPassesThroughAndOtherGeminiPathsGoToTheGeminiUpstream) {
  fs::path dir = test::scratch_folder_until_exit("serve-gemini-router");
  const std::string answer = R"({"candidates":[{"content":{"parts":[{"text":"{\"complexity_score\":10}"}],"role":"model"},"finishReason":"STOP"}]})";
  LoopbackHttpServer gemini({{200, {{"content-type", "application/json"}}, answer}, {200, {}, R"({"totalTokens":31})"}});
  LoopbackHttpServer anthropic({});
  ServeProcess serve(dir, write_config(dir, gemini.base_url(), kMicro), anthropic.base_url());
  const std::string router = R"({"contents":[{"parts":[{"text":")" + std::string(30000, 'q') +
                             R"("}],"role":"user"}],"systemInstruction":{"parts":[{"text":"route"}]},)"
                             R"("generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT"}}})";
  Reply r = call(serve.port(), "POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent", router, {{"x-goog-api-key", kHeaderKey}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, answer);
  EXPECT_EQ(r.headers["x-compactor-status"], "passed");
  Reply counted = call(serve.port(), "POST", "/v1beta/models/gemini-3.5-flash-lite:countTokens", router);
  EXPECT_EQ(counted.status, 200);
  EXPECT_EQ(counted.body, R"({"totalTokens":31})");
  auto got = gemini.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, router);  // over the budget, but not the agent's conversation
  EXPECT_EQ(got[1].target, "/v1beta/models/gemini-3.5-flash-lite:countTokens");
  EXPECT_TRUE(anthropic.requests().empty());
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(compactor_serve_requests_total{route="gemini",outcome="passed"} 1)"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("compactor_serve_state_total"), std::string::npos) << "a passed call has no continuity state";
}

TEST(ServeGemini, TheInputTokenCountRefusalRunsOnPromptTooLongAndRetriesOnce) {
  fs::path dir = test::scratch_folder_until_exit("serve-gemini-ptl");
  const std::string refusal = R"({"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}})";
  const std::string answer = R"({"candidates":[{"content":{"parts":[{"text":"done"}],"role":"model"},"finishReason":"STOP"}]})";
  LoopbackHttpServer gemini({{400, {{"content-type", "application/json"}}, refusal}, {200, {}, answer}});
  ServeProcess serve(dir,
                     write_config(dir, gemini.base_url(),
                                  "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2, min_chars: 120}\n"
                                  "on_prompt_too_long:\n  - stage: reactive_compact\n    params: {keep_messages: 5}\n"),
                     gemini.base_url());
  const std::string body = gemini_body(4, 1000);  // within the budget: nothing to do before the call
  Reply r = call(serve.port(), "POST", "/v1beta/models/gemini-3.1-pro-preview:generateContent", body);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, answer);
  EXPECT_EQ(r.headers["x-compactor-status"], "retried");
  auto got = gemini.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, body);
  EXPECT_LT(got[1].body.size(), got[0].body.size());
  std::ofstream(dir / "retry.json") << got[1].body;
  std::string err;
  EXPECT_EQ(check(dir / "retry.json", err), 0) << err;
  const std::string metrics = call(serve.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("\ncompactor_serve_retries_total 1\n"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace compactor
