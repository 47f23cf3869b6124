// The Gemini adapter end to end, in process: a generateContent body goes through the wire
// format, the continuation rule and a real pipeline (the micro and snip plugins) as one of
// serve's workers runs it, and the body it would forward is read back as JSON. What it must hold
// is the Gemini API's contract (Google's documentation: roles user/model, a Content has parts, a
// turn with N functionCall parts is answered by the next turn's N functionResponse parts, the
// current turn's calls keep their thought signatures) and the carry rule, checked here by the
// test's own reading of the body, never by the adapter's checkers: every part and field the
// client sent survives where its Content goes, an edited response changes only its output, a
// dropped turn is archived with its signatures, and `check` names the rule a history breaks.
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/stderr_logger.hpp"
#include "model/conversation_host.hpp"
#include "store/folder_store.hpp"
#include "serve/compaction_job.hpp"
#include "wire/anthropic/anthropic_messages.hpp"
#include "wire/gemini/gemini.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>

namespace compactor {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

struct Compacted {
  serve::CompactionResult result;
  std::string sent;  // what would be forwarded: the compacted body, or the client's own
};

class GeminiCarry : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::scratch_folder_until_exit("wire-gemini-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())); }

  Pipeline pipeline(const std::string& stages, std::uint64_t limit) {
    std::ofstream(dir_ / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: " << limit << ", target: " << limit * 4 / 5
                                   << "}\narchive: {dir: " << (dir_ / "archive").string() << "}\nplugin_dirs: [\""
                                   << COMPACTOR_PLUGIN_DIR << "\"]\npipeline:\n" << stages;
    auto loaded = load_pipeline_config((dir_ / "c.yaml").string());
    if (!loaded.config) throw std::runtime_error(loaded.errors.front());
    auto built = Pipeline::build(std::move(*loaded.config));
    if (!built) throw std::runtime_error(built.error().message);
    return std::move(*built);
  }

  Compacted compact(Pipeline& p, const std::string& body) {
    store::FolderStore store((dir_ / "archive").string());  // the config's archive folder, as a worker opens it
    auto log = make_stderr_logger("");
    Compacted c{serve::run_compaction(p, store, wire::gemini(), body, false, nullptr, *log), ""};
    c.sent = c.result.outcome.result == serve::JobOutcome::compacted ? c.result.body : body;
    return c;
  }

  std::string file(const std::string& name, const std::string& text) {
    std::ofstream((dir_ / name).string(), std::ios::binary) << text;
    return (dir_ / name).string();
  }

  fs::path dir_;
};

// What Gemini CLI 0.61 sends: the session context and the task in the first user turn, then per
// step a model turn (its text and a signed read_file call with Gemini CLI's id) and a user turn
// with the call's response (the id after the response, as Gemini CLI writes it), each result
// `size` chars.
std::string step_call(int i) {
  return R"({"parts":[{"text":"Reading file )" + std::to_string(i) + R"(."},{"functionCall":{"id":"read_file_)" + std::to_string(i) +
         R"(","args":{"file_path":"/w/f)" + std::to_string(i) + R"(.txt"},"name":"read_file"},"thoughtSignature":"c2lnLQ)" +
         std::to_string(i) + R"(\/w=="}],"role":"model"})";
}
std::string step_result(int i, std::size_t size) {
  return R"({"parts":[{"functionResponse":{"name":"read_file","response":{"output":")" + std::string(size, static_cast<char>('a' + i % 26)) +
         R"("},"id":"read_file_)" + std::to_string(i) + R"("}}],"role":"user"})";
}
std::vector<std::string> history(int reads, std::size_t size) {
  std::vector<std::string> c;
  c.push_back(R"({"parts":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"},{"text":"Read the files one by one, caf\u00e9."}],"role":"user"})");
  for (int i = 1; i <= reads; ++i) {
    c.push_back(step_call(i));
    c.push_back(step_result(i, size));
  }
  return c;
}

constexpr const char* kFrame =
    R"("systemInstruction":{"parts":[{"text":"You are Gemini CLI, an interactive CLI agent.\u00e9"}],"role":"user"},)"
    R"("tools":[{"functionDeclarations":[{"name":"read_file","description":"Reads a file","parametersJsonSchema":{"type":"object","properties":{"file_path":{"type":"string"}}}}]}],)"
    R"("toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},)"
    R"("generationConfig":{"temperature":1.0,"topP":0.95,"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}},)"
    R"("safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}])";

std::string body_of(const std::vector<std::string>& contents, const std::string& frame = kFrame) {
  std::string b = R"({"contents":[)";
  for (std::size_t i = 0; i < contents.size(); ++i) b += (i ? "," : "") + contents[i];
  return b + "]" + (frame.empty() ? "" : "," + frame) + "}";
}

json::array contents_of(const std::string& body) { return json::parse(body).at("contents").as_array(); }

const json::object* call_of(const json::value& part) {
  const json::object& p = part.as_object();
  const json::value* fc = p.if_contains("functionCall");
  return fc != nullptr ? &fc->as_object() : nullptr;
}
const json::object* response_of(const json::value& part) {
  const json::object& p = part.as_object();
  const json::value* fr = p.if_contains("functionResponse");
  return fr != nullptr ? &fr->as_object() : nullptr;
}

// The Gemini API's rules, read on a body by the test itself: what every forwarded body must meet.
void expect_the_api_accepts(const std::string& body) {
  json::array c = contents_of(body);
  ASSERT_FALSE(c.empty());
  for (std::size_t i = 0; i < c.size(); ++i) {
    const json::object& turn = c[i].as_object();
    const json::value* role = turn.if_contains("role");
    const std::string r = role != nullptr ? std::string(role->as_string()) : "user";
    EXPECT_TRUE(r == "user" || r == "model") << "contents." << i << " role " << r;
    const json::array& parts = turn.at("parts").as_array();
    EXPECT_FALSE(parts.empty()) << "contents." << i << " has no parts";
    std::vector<std::string> calls;
    for (const auto& p : parts)
      if (const json::object* fc = call_of(p)) calls.push_back(std::string(fc->at("name").as_string()));
    if (calls.empty()) continue;
    EXPECT_EQ(r, "model") << "contents." << i;
    ASSERT_GT(i, 0u) << "a function call turn first";
    const json::value* before = c[i - 1].as_object().if_contains("role");
    EXPECT_TRUE(before == nullptr || before->as_string() == "user") << "contents." << i << " follows a model turn";
    ASSERT_LT(i + 1, c.size()) << "contents." << i << " has no response turn";
    std::vector<std::string> answered;
    for (const auto& p : c[i + 1].as_object().at("parts").as_array())
      if (const json::object* fr = response_of(p)) answered.push_back(std::string(fr->at("name").as_string()));
    EXPECT_EQ(answered, calls) << "contents." << i << ": " << calls.size() << " calls, " << answered.size() << " responses";
  }
}

// Every Content of `original` whose bytes are in `sent` went out as the client's bytes.
std::size_t verbatim_count(const std::vector<std::string>& original, const std::string& sent) {
  std::size_t n = 0;
  for (const auto& c : original) n += sent.find(c) != std::string::npos;
  return n;
}

TEST_F(GeminiCarry, EveryPartKindAndFieldOfARequestWithNothingToDoComesBackAsTheClientSentIt) {
  std::vector<std::string> c = history(2, 100);
  // A model turn with its thoughts, code, a signed text part and a part kind the API may add later;
  // a user turn with inline and file data and a Content field the API may add; a call and its
  // response in the proto names (function_call), with a field the adapter has no place for.
  c.push_back(R"({"parts":[{"text":"pondering","thought":true},{"executableCode":{"language":"PYTHON","code":"print 1"}},)"
              R"({"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1"}},{"text":"Here is what I found.","thoughtSignature":"dGV4dC1zaWc="},)"
              R"({"futurePart":{"x":1},"thoughtSignature":"ZnV0dXJl"}],"role":"model"})");
  c.push_back(R"({"role":"user","parts":[{"text":"look at this"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},)"
              R"({"fileData":{"mimeType":"application/pdf","fileUri":"gs://b/f.pdf"}}],"futureField":{"y":2}})");
  c.push_back(R"({"role":"model","parts":[{"function_call":{"name":"list_dir","args":{"dir":"/w"},"partialArgs":[]},"thought_signature":"c25ha2U="}]})");
  c.push_back(R"({"role":"user","parts":[{"function_response":{"name":"list_dir","response":{"files":["a","b"]},"willContinue":false}}]})");
  const std::string body = body_of(c);
  auto read = wire::gemini().read(body, "request");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_TRUE((*read)->pass_reason().empty()) << (*read)->pass_reason();
  // Written back as it is, the request is the client's body, byte for byte.
  auto written = (*read)->write((*read)->conversation());
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(*written, body);
  // Carried data counts in the budget: the model form holds every field, and so do the sizes.
  std::string all;
  for (const auto& m : (*read)->conversation().messages()) all += m->raw();
  for (const char* field : {"c2lnLQ1", "pondering", "executableCode", "OUTCOME_OK", "dGV4dC1zaWc=", "futurePart", "iVBORw0KGgo=",
                            "gs://b/f.pdf", "futureField", "c25ha2U=", "partialArgs", "willContinue"})
    EXPECT_NE(all.find(field), std::string::npos) << field;
  // systemInstruction and tools count like system and tools; the generation settings do not.
  const auto& fixed_json = ConversationHost::layout((*read)->conversation().frame()).fixed_json;
  ASSERT_EQ(fixed_json.size(), 2u);
  EXPECT_NE(fixed_json[0].find("You are Gemini CLI"), std::string_view::npos);
  EXPECT_NE(fixed_json[1].find("functionDeclarations"), std::string_view::npos);
  Pipeline p = pipeline("  - stage: micro\n    when: over_budget\n    params: {keep_recent: 0, min_chars: 50}\n", 10000000);
  Compacted out = compact(p, body);
  EXPECT_EQ(out.result.outcome.result, serve::JobOutcome::unchanged) << out.result.outcome.warning;
}

TEST_F(GeminiCarry, AMaskedResponseChangesOnlyItsOutputAndEverySignatureStaysByteIdentical) {
  const std::vector<std::string> c = history(8, 3000);
  const std::string body = body_of(c);
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 2, min_chars: 120}\n", 12000);
  Compacted out = compact(p, body);
  ASSERT_EQ(out.result.outcome.result, serve::JobOutcome::compacted) << out.result.outcome.warning;
  ASSERT_LT(out.sent.size(), body.size() / 2);
  expect_the_api_accepts(out.sent);
  json::array sent = contents_of(out.sent), original = contents_of(body);
  ASSERT_EQ(sent.size(), original.size());  // micro drops nothing
  // Every model turn (its signature with it) is the client's bytes; so is every kept response.
  for (int i = 1; i <= 8; ++i) EXPECT_NE(out.sent.find(step_call(i)), std::string::npos) << "step " << i;
  EXPECT_NE(out.sent.find(step_result(8, 3000)), std::string::npos);
  std::size_t masked = 0;
  for (std::size_t i = 2; i < sent.size(); i += 2) {
    const json::object* now = response_of(sent[i].at("parts").at(0));
    const json::object* was = response_of(original[i].at("parts").at(0));
    ASSERT_NE(now, nullptr);
    EXPECT_EQ(now->at("id"), was->at("id"));
    EXPECT_EQ(now->at("name"), was->at("name"));
    std::string output(now->at("response").at("output").as_string());
    if (output.find("[compactor") == std::string::npos) continue;
    ++masked;
    EXPECT_EQ(now->at("response").as_object().size(), 1u);  // the output replaced, nothing added
  }
  EXPECT_GT(masked, 0u);
  // The request's settings and declarations went out as the client sent them.
  const std::string settings = kFrame;
  EXPECT_NE(out.sent.find(settings), std::string::npos);
}

TEST_F(GeminiCarry, ADroppedTurnIsArchivedWithItsSignatureAndTheMarkerIsAUserTextTurn) {
  const std::vector<std::string> c = history(40, 200);
  const std::string body = body_of(c);
  Pipeline p = pipeline("  - stage: snip\n    params: {max_messages: 20, keep_head: 1, keep_messages: 10}\n", 10000);
  Compacted out = compact(p, body);
  ASSERT_EQ(out.result.outcome.result, serve::JobOutcome::compacted) << out.result.outcome.warning;
  expect_the_api_accepts(out.sent);
  json::array sent = contents_of(out.sent);
  ASSERT_LT(sent.size(), 40u);
  // The marker is a user turn of one text part; the Contents kept around it are the client's bytes.
  std::size_t markers = 0;
  for (const auto& turn : sent) {
    const json::array& parts = turn.at("parts").as_array();
    if (parts.size() != 1 || !parts[0].as_object().contains("text")) continue;
    if (parts[0].at("text").as_string().find("[compactor") == json::string::npos) continue;
    ++markers;
    EXPECT_EQ(turn.at("role"), "user");
  }
  EXPECT_EQ(markers, 1u);
  EXPECT_EQ(verbatim_count(c, out.sent), sent.size() - 1);
  // The snip marker names the receipt of what it cut; restored, it holds the signatures.
  auto receipts = find_receipts(out.sent);
  ASSERT_FALSE(receipts.empty());
  auto restored = restore_blob((dir_ / "archive").string(), receipts.front());
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_NE(restored->find(R"("thoughtSignature":"c2lnLQ3/w==")"), std::string::npos) << restored->substr(0, 2000);
}

TEST_F(GeminiCarry, ASummaryNeverQuotesASignatureAndTheTurnsItReplacedAreArchivedWithThem) {
  const std::vector<std::string> c = history(30, 400);
  const std::string body = body_of(c);
  Pipeline p = pipeline("  - stage: summarize\n    params: {max_chars: 1000}\n", 8000);
  Compacted out = compact(p, body);
  ASSERT_EQ(out.result.outcome.result, serve::JobOutcome::compacted) << out.result.outcome.warning;
  expect_the_api_accepts(out.sent);
  json::array sent = contents_of(out.sent);
  const json::object& summary = sent[0].as_object();
  EXPECT_EQ(summary.at("role"), "user");
  ASSERT_EQ(summary.at("parts").as_array().size(), 1u);
  const std::string text(summary.at("parts").at(0).at("text").as_string());
  EXPECT_NE(text.find("sha256:"), std::string::npos);
  EXPECT_EQ(text.find("c2ln"), std::string::npos) << text;  // no signature is quoted
  // The turns after it are the client's own, signatures and all.
  EXPECT_EQ(verbatim_count(c, out.sent), sent.size() - 1);
  auto receipts = find_receipts(text);
  ASSERT_FALSE(receipts.empty());
  auto restored = restore_blob((dir_ / "archive").string(), receipts.front());
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_NE(restored->find(R"("thoughtSignature":"c2lnLQ1/w==")"), std::string::npos);
}

TEST_F(GeminiCarry, CallsWithoutIdsArePairedByNameAndOrderAndNoMadeUpIdGoesOut) {
  // What the Gen AI SDK sends for parallel calls the API returned without ids: two read_file
  // calls and a list_dir, answered in another order than asked.
  std::vector<std::string> c = {R"({"role":"user","parts":[{"text":"Read a and b, list /w."}]})"};
  for (int step = 0; step < 6; ++step) {
    const std::string s = std::to_string(step);
    c.push_back(R"({"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"file_path":"a)" + s + R"("}},"thoughtSignature":"c2ln)" + s +
                R"("},{"functionCall":{"name":"list_dir","args":{"dir":"/w"}}},{"functionCall":{"name":"read_file","args":{"file_path":"b)" + s + R"("}}}]})");
    c.push_back(R"({"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"A)" + s + std::string(400, 'a') +
                R"("}}},{"functionResponse":{"name":"list_dir","response":{"output":"a b"}}},{"functionResponse":{"name":"read_file","response":{"output":"B)" +
                s + std::string(400, 'b') + R"("}}}]})");
  }
  const std::string body = body_of(c);
  auto read = wire::gemini().read(body, "request");
  ASSERT_TRUE(read) << read.error().message;
  const Conversation& conv = (*read)->conversation();
  // Each response answers the call of its name, in order: A… the first read_file call's.
  const Message& calls = conv[1];
  const Message& results = conv[2];
  ASSERT_EQ(calls.blocks().size(), 3u);
  ASSERT_EQ(results.blocks().size(), 3u);
  EXPECT_EQ(results.blocks()[0].tool_use_id(), calls.blocks()[0].id());
  EXPECT_EQ(results.blocks()[1].tool_use_id(), calls.blocks()[1].id());
  EXPECT_EQ(results.blocks()[2].tool_use_id(), calls.blocks()[2].id());
  EXPECT_NE(calls.blocks()[0].id(), calls.blocks()[2].id());
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 1, min_chars: 120}\n", 3000);
  Compacted out = compact(p, body);
  ASSERT_EQ(out.result.outcome.result, serve::JobOutcome::compacted) << out.result.outcome.warning;
  expect_the_api_accepts(out.sent);
  EXPECT_EQ(out.sent.find("\"id\""), std::string::npos) << "an id the client never sent went out";
  EXPECT_EQ(out.sent.find(calls.blocks()[0].id()), std::string::npos);
  // A parallel step stays whole: every kept model turn has its three calls, answered by three.
  for (int step = 0; step < 6; ++step) EXPECT_NE(out.sent.find(c[1 + 2 * step]), std::string::npos) << step;
}

TEST_F(GeminiCarry, ARouterCallAStructuredAnswerAndACachedContentPassThroughWithNoState) {
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 0, min_chars: 10}\n", 100);
  const std::string task = R"({"role":"user","parts":[{"text":"Which model should answer this? )" + std::string(300, 'x') + R"("}]})";
  const std::string router = R"({"contents":[)" + task +
                             R"(],"systemInstruction":{"parts":[{"text":"route"}]},"generationConfig":{"responseMimeType":"application/json",)"
                             R"("responseJsonSchema":{"type":"OBJECT","properties":{"complexity_score":{"type":"INTEGER"}}}}})";
  const std::string declared = R"(,"tools":[{"functionDeclarations":[{"name":"read_file"}]}])";
  for (const std::string& body : {router, body_of(history(3, 500), std::string(kFrame).substr(0, std::string(kFrame).find(R"(,"toolConfig")")) +
                                                                        R"(,"cachedContent":"cachedContents/abc")"),
                                  R"({"contents":[)" + task + "]" + declared + R"(,"generationConfig":{"responseSchema":{"type":"STRING"}}})",
                                  R"({"contents":[)" + task + R"(],"tools":[{"googleSearch":{}}]})"}) {
    Compacted out = compact(p, body);
    EXPECT_EQ(out.result.outcome.result, serve::JobOutcome::passed) << body.substr(0, 200);
    EXPECT_FALSE(out.result.outcome.warning.empty());
    EXPECT_EQ(out.sent, body);
  }
  // Nothing was remembered for them.
  EXPECT_FALSE(fs::exists(dir_ / "archive" / "serve-state"));
}

TEST_F(GeminiCarry, AnAppendedHistoryContinuesAndOneTheClientMaskedItselfIsAMissNotAnError) {
  Pipeline p = pipeline("  - stage: micro\n    when: over_budget\n    params: {keep_recent: 2, min_chars: 120}\n", 20000);
  Compacted first = compact(p, body_of(history(10, 3000)));
  ASSERT_EQ(first.result.outcome.result, serve::JobOutcome::compacted) << first.result.outcome.warning;
  Compacted next = compact(p, body_of(history(11, 3000)));
  EXPECT_TRUE(next.result.outcome.state_hit);
  EXPECT_EQ(next.result.outcome.covered, 21u);
  expect_the_api_accepts(next.sent);
  // Gemini CLI masks old outputs itself: the history it sends is no longer the one it sent.
  std::vector<std::string> masked = history(12, 3000);
  for (int i = 1; i <= 6; ++i) {
    const std::string was = step_result(i, 3000);
    masked[static_cast<std::size_t>(2 * i)] = R"({"parts":[{"functionResponse":{"name":"read_file","response":{"output":"<tool_output_masked>\nOutput too large.\n</tool_output_masked>"},"id":"read_file_)" +
                                              std::to_string(i) + R"("}}],"role":"user"})";
    ASSERT_NE(was, masked[static_cast<std::size_t>(2 * i)]);
  }
  Compacted after = compact(p, body_of(masked));
  EXPECT_FALSE(after.result.outcome.state_hit);
  EXPECT_TRUE(after.result.outcome.result == serve::JobOutcome::compacted || after.result.outcome.result == serve::JobOutcome::unchanged)
      << after.result.outcome.warning;
  expect_the_api_accepts(after.sent);
}

TEST_F(GeminiCarry, TheContextLengthRefusalIsTheInputTokenCountOne) {
  const wire::WireFormat& g = wire::gemini();
  EXPECT_TRUE(g.context_refusal(400, R"({"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}})"));
  EXPECT_FALSE(g.context_refusal(400, R"({"error":{"code":400,"message":"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.","status":"INVALID_ARGUMENT"}})"));
  EXPECT_FALSE(g.context_refusal(429, R"({"error":{"code":429,"message":"The input token count exceeds the maximum","status":"RESOURCE_EXHAUSTED"}})"));
  auto e = json::parse(g.error_reply(wire::ProxyError::overloaded, "busy").body);
  EXPECT_EQ(e.at("error").at("status"), "UNAVAILABLE");
  EXPECT_TRUE(g.handles("POST", "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent"));
  EXPECT_TRUE(g.handles("POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent"));
  EXPECT_FALSE(g.handles("POST", "/v1beta/models/gemini-3.5-flash-lite:countTokens"));
  EXPECT_FALSE(g.handles("GET", "/v1beta/models/m:generateContent"));
  EXPECT_TRUE(wire::is_gemini_api_path("/v1beta/models/m:countTokens"));
  EXPECT_FALSE(wire::is_gemini_api_path("/v1/messages"));
  // The model is in the path (its window and price are the budget's): serve hands it to the worker.
  EXPECT_EQ(g.model_in_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent"), "gemini-2.5-flash");
  EXPECT_EQ(g.model_in_path("/v1/tunedModels/my-model:generateContent"), "my-model");
  EXPECT_EQ(g.model_in_path("/v1beta/models/m:countTokens"), "");
  EXPECT_EQ(wire::anthropic_messages().model_in_path("/v1/messages"), "");
}

// `check` on a hand-made body per rule the Gemini API states, each refused with the rule named;
// a valid one accepted and given back byte for byte by `run` with nothing to do.
TEST_F(GeminiCarry, CheckRefusesEachRuleBreakWithTheRuleNamedAndRunGivesAValidBodyBackAsItCame) {
  const std::string user = R"({"role":"user","parts":[{"text":"go"}]})";
  const std::string call = R"({"role":"model","parts":[{"functionCall":{"name":"read_file","args":{}},"thoughtSignature":"czE="}]})";
  const std::string two_calls =
      R"({"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"p":1}},"thoughtSignature":"czI="},{"functionCall":{"name":"read_file","args":{"p":2}}}]})";
  const std::string answer = R"({"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"x"}}}]})";
  const std::string unsigned_call = R"({"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"p":3}}}]})";
  struct Case {
    std::string name, rule;
    std::vector<std::string> contents;
  };
  const std::vector<Case> cases = {
      {"role", "gemini_turns", {user, R"({"role":"function","parts":[{"text":"x"}]})"}},
      {"no-parts", "gemini_turns", {user, R"({"role":"model","parts":[]})"}},
      {"call-after-model", "gemini_turns", {user, R"({"role":"model","parts":[{"text":"hm"}]})", call, answer}},
      {"one-of-two", "gemini_function_responses", {user, two_calls, answer}},
      {"orphan", "gemini_function_responses", {user, answer}},
      {"trailing-call", "gemini_function_responses", {user, call}},
      {"call-then-model", "gemini_function_responses", {user, call, R"({"role":"model","parts":[{"text":"no"}]})"}},
      {"unsigned-step", "gemini_thought_signatures", {user, call, answer, unsigned_call, answer}},
  };
  for (const Case& k : cases) {
    const std::string input = file(k.name + ".json", body_of(k.contents));
    auto r = test::run_cli({"check", "--input", input});
    EXPECT_EQ(r.exit_code, 2) << k.name << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(k.rule), std::string::npos) << k.name << ": " << r.err;
  }
  // Gemini CLI, after its loop check, leaves a call unanswered and tells the model so in a user
  // text turn: the API's rule is about the function response turn, and this has none.
  const std::string abandoned = file("abandoned.json", body_of({user, call, R"({"role":"user","parts":[{"text":"System: Potential loop detected."}]})"}));
  auto kept = test::run_cli({"check", "--input", abandoned});
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  const std::string valid = body_of({user, call, answer, std::string(R"({"role":"model","parts":[{"text":"done","thoughtSignature":"ZW5k"}]})")});
  const std::string input = file("valid.json", valid);
  auto ok = test::run_cli({"check", "--input", input});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto detected = test::run_cli({"count", "--input", input});
  EXPECT_EQ(detected.exit_code, 0) << detected.err;
  std::ofstream(dir_ / "run.yaml") << "version: 1\nbudget: {unit: chars, limit: 1000000, target: 800000}\narchive: {dir: " << (dir_ / "archive").string()
                                   << "}\nplugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\npipeline:\n  - stage: micro\n    when: over_budget\n";
  auto run = test::run_cli({"run", "--config", (dir_ / "run.yaml").string(), "--input", input, "--input-format", "gemini", "--output",
                            (dir_ / "out.json").string()});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(test::read_file((dir_ / "out.json").string()), valid);
}

}  // namespace
}  // namespace compactor
