// The Responses adapter end to end, in process: a Codex-shaped request body goes through the wire
// format, the continuation rule and a real pipeline (the micro and snip plugins) as one of
// serve's workers runs it, and the body it would forward is read back as JSON. What it must hold
// is written from the Responses API's documented contract, not from the adapter: untouched items
// are the client's bytes, every reasoning item (with its encrypted_content) stays byte-identical
// before the item it belongs to, every call keeps its output, the instructions and the context
// Codex injects stay in place, and a history that breaks one of the API's rules is refused with
// the rule named (by `check` too, on hand-made bodies in tests/data/responses).
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/stderr_logger.hpp"
#include "model/conversation_host.hpp"
#include "store/folder_store.hpp"
#include "serve/compaction_job.hpp"
#include "wire/openai_responses/openai_responses.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

namespace compactor {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

struct Compacted {
  serve::CompactionResult result;
  std::string sent;
};

class ResponsesCarry : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_folder_until_exit("wire-responses-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }

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
    Compacted c{serve::run_compaction(p, store, wire::openai_responses(), body, false, nullptr, *log), ""};
    c.sent = c.result.outcome.result == serve::JobOutcome::compacted ? c.result.body : body;
    return c;
  }

  fs::path dir_;
};

// A Codex-shaped input: the base prompt and the permissions as developer messages, the
// environment context as a user message, the task; then `reads` turns of a reasoning item, an
// exec_command call and its output of `size` chars; every fifth turn a developer message (a
// permission change) after the output; a final reasoning item and message.
std::vector<std::string> codex_items(int reads, std::size_t size) {
  std::vector<std::string> items;
  items.push_back(R"({"type":"message","id":"msg_base","role":"developer","content":[{"type":"input_text","text":"You are a coding agent running in the Codex CLI."}]})");
  items.push_back(R"({"type":"message","id":"msg_perm","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>full access</permissions instructions>"}]})");
  items.push_back(R"({"type":"message","id":"msg_env","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]})");
  items.push_back(R"({"type":"message","id":"msg_task","role":"user","content":[{"type":"input_text","text":"Read the files one by one."}]})");
  for (int i = 1; i <= reads; ++i) {
    const std::string n = std::to_string(i);
    items.push_back(R"({"type":"reasoning","id":"rs_)" + n + R"(","summary":[{"type":"summary_text","text":"next file"}],"content":null,"encrypted_content":"gAAAAB)" +
                    std::string(40, static_cast<char>('A' + i % 26)) + n + R"(=="})");
    items.push_back(R"({"type":"function_call","status":"completed","id":"fc_)" + n + R"(","name":"exec_command","arguments":"{\"cmd\":\"cat f)" + n +
                    R"(.txt\"}","call_id":"call_)" + n + R"("})");
    items.push_back(R"({"type":"function_call_output","id":"fco_)" + n + R"(","call_id":"call_)" + n + R"(","output":")" +
                    std::string(size, static_cast<char>('a' + i % 26)) + R"("})");
    if (i % 5 == 0)
      items.push_back(R"({"type":"message","id":"msg_dev_)" + n + R"(","role":"developer","content":[{"type":"input_text","text":"Permissions changed at )" + n + R"(."}]})");
  }
  return items;
}

std::string body_of(const std::vector<std::string>& items) {
  std::string b = R"({"model":"gpt-5.1-codex","stream":true,"store":false,"include":["reasoning.encrypted_content"],"input":[)";
  for (std::size_t i = 0; i < items.size(); ++i) b += (i ? "," : "") + items[i];
  return b + R"(],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}}],"prompt_cache_key":"k"})";
}

json::array input_of(const std::string& body) { return json::parse(body).at("input").as_array(); }

// The API's rules on an input, as its documentation states them (written here on the JSON, not
// through the adapter): every call has its output later, every output a call earlier, item ids
// unique, a reasoning item followed by another item.
std::vector<std::string> api_rule_breaks(const json::array& input) {
  std::vector<std::string> out;
  std::set<std::string> calls, outputs, ids;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const json::object& item = input[i].as_object();
    const std::string type = item.contains("type") ? std::string(item.at("type").as_string()) : "message";
    if (item.contains("id") && !ids.insert(std::string(item.at("id").as_string())).second) out.push_back("duplicate id at " + std::to_string(i));
    if (type == "function_call") calls.insert(std::string(item.at("call_id").as_string()));
    if (type == "function_call_output") {
      if (!calls.count(std::string(item.at("call_id").as_string()))) out.push_back("output without a call at " + std::to_string(i));
      outputs.insert(std::string(item.at("call_id").as_string()));
    }
    if (type == "reasoning" && (i + 1 == input.size() || input[i + 1].as_object().if_contains("type") == nullptr ||
                                input[i + 1].as_object().at("type") == "function_call_output"))
      out.push_back("reasoning without its item at " + std::to_string(i));
  }
  for (const auto& c : calls)
    if (!outputs.count(c)) out.push_back("call without output: " + c);
  return out;
}

TEST_F(ResponsesCarry, ARequestWithNothingToDoComesBackAsTheClientSentIt) {
  std::vector<std::string> items = codex_items(3, 100);
  items.push_back(R"({"type":"reasoning","id":"rs_end","summary":[],"encrypted_content":"gAAAAB-final=="})");
  items.push_back(R"({"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}})");
  items.push_back(R"({"type":"message","status":"completed","id":"msg_end","role":"assistant","phase":"final","content":[{"type":"output_text","text":"done","annotations":[],"logprobs":[]}]})");
  items.push_back(R"({"type":"custom_tool_call","id":"ctc_1","status":"completed","call_id":"call_p","name":"apply_patch","input":"*** Begin Patch\n*** End Patch"})");
  items.push_back(R"({"type":"custom_tool_call_output","id":"ctco_1","call_id":"call_p","output":"Done!"})");
  items.push_back(R"({"type":"compaction","encrypted_content":"gAAAAB-compacted=="})");
  items.push_back(R"({"role":"user","content":"and then?"})");
  const std::string body = body_of(items);
  auto read = wire::openai_responses().read(body, "request");
  ASSERT_TRUE(read) << read.error().message;
  auto written = (*read)->write((*read)->conversation());
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(*written, body);
  // The head (two developer messages, the environment context) is not among the messages: the
  // task is the first one, and the later developer messages and the compaction item are entries.
  const Conversation& c = (*read)->conversation();
  EXPECT_NE(c[0].raw().find("Read the files one by one."), std::string_view::npos);
  EXPECT_EQ(c.frame().system_entries.size(), 1u);  // the compaction item
  // Carried data counts: every reasoning item's encrypted_content is in the model form.
  std::string all;
  for (const auto& m : c.messages()) all += m->raw();
  for (const char* field : {"gAAAAB-final==", "ws_1", "\"phase\":\"final\"", "logprobs", "ctc_1", "apply_patch", "fco_2"})
    EXPECT_NE(all.find(field), std::string::npos) << field;
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 0, min_chars: 50}\n", 10000000);
  Compacted compacted = compact(p, body);
  EXPECT_EQ(compacted.result.outcome.result, serve::JobOutcome::unchanged) << compacted.result.outcome.warning;
  // A bare items array is read as the body that holds it, and written back as an array.
  std::string bare = "[";
  for (std::size_t i = 0; i < items.size(); ++i) bare += (i ? "," : "") + items[i];
  bare += "]";
  auto bare_read = wire::openai_responses().read(bare, "items");
  ASSERT_TRUE(bare_read) << bare_read.error().message;
  EXPECT_EQ(*(*bare_read)->write((*bare_read)->conversation()), bare);
}

TEST_F(ResponsesCarry, AnEditedOutputChangesOnlyItsOutputAndEveryReasoningItemStaysByteIdentical) {
  const std::vector<std::string> items = codex_items(8, 3000);
  const std::string body = body_of(items);
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 2, min_chars: 120}\n", 12000);
  Compacted c = compact(p, body);
  ASSERT_EQ(c.result.outcome.result, serve::JobOutcome::compacted) << c.result.outcome.warning;
  ASSERT_LT(c.sent.size(), body.size() / 2);
  json::array sent = input_of(c.sent), original = input_of(body);
  ASSERT_EQ(sent.size(), original.size());
  std::size_t masked = 0;
  for (std::size_t i = 0; i < sent.size(); ++i) {
    if (sent[i].as_object().at("type") != "function_call_output") {
      EXPECT_NE(c.sent.find(items[i]), std::string::npos) << "item " << i << " is not the client's bytes";
      continue;
    }
    if (sent[i] == original[i]) continue;
    ++masked;
    json::object now = sent[i].as_object(), was = original[i].as_object();
    EXPECT_NE(std::string(now.at("output").as_string()).find("sha256:"), std::string::npos) << i;
    now.erase("output");
    was.erase("output");
    EXPECT_EQ(now, was) << i;
  }
  EXPECT_GT(masked, 0u);
  EXPECT_TRUE(api_rule_breaks(sent).empty());
}

TEST_F(ResponsesCarry, DroppedTurnsAreArchivedWithTheirReasoningAndTheInstructionsStayInPlace) {
  const std::vector<std::string> items = codex_items(40, 200);
  const std::string body = body_of(items);
  Pipeline p = pipeline("  - stage: snip\n    params: {max_messages: 20, keep_head: 2, keep_messages: 10}\n", 10000);
  Compacted c = compact(p, body);
  ASSERT_EQ(c.result.outcome.result, serve::JobOutcome::compacted) << c.result.outcome.warning;
  json::array sent = input_of(c.sent);
  ASSERT_LT(sent.size(), input_of(body).size());
  EXPECT_EQ(api_rule_breaks(sent), std::vector<std::string>{});
  // The head is first, as sent; every developer message is still there, each right after the
  // output it followed; every reasoning item still sent is byte-identical to the client's.
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(json::serialize(sent[k]), json::serialize(json::parse(items[k])));
  std::size_t developer = 0;
  for (std::size_t i = 3; i < sent.size(); ++i) {
    const json::object& item = sent[i].as_object();
    if (item.contains("role") && item.at("role") == "developer") {
      ++developer;
      // Its item before it is the output it followed (or a marker that replaced what it followed).
      const json::object& before = sent[i - 1].as_object();
      EXPECT_TRUE(!before.contains("type") || before.at("type") != "function_call") << i;
    }
    if (item.contains("type") && item.at("type") == "reasoning") {
      EXPECT_NE(c.sent.find(json::serialize(item)), std::string::npos);
    }
  }
  EXPECT_EQ(developer, 8u);
  // A dropped turn is in the archive with its reasoning item's encrypted_content.
  auto receipts = find_receipts(c.sent);
  ASSERT_FALSE(receipts.empty());
  auto restored = restore_blob((dir_ / "archive").string(), receipts.front());
  ASSERT_TRUE(restored) << restored.error().message;
  EXPECT_NE(restored->find("\"encrypted_content\":\"gAAAAB"), std::string::npos) << restored->substr(0, 2000);
}

TEST_F(ResponsesCarry, RequestsWhoseHistoryTheUpstreamHoldsArePassedThrough) {
  EXPECT_TRUE(wire::openai_responses().passed_through(R"({"model":"m","previous_response_id":"resp_1","input":[]})"));
  EXPECT_TRUE(wire::openai_responses().passed_through(R"({"model":"m","conversation":"conv_1","input":[]})"));
  EXPECT_FALSE(wire::openai_responses().passed_through(R"({"model":"m","previous_response_id":null,"input":[]})"));
  EXPECT_TRUE(wire::openai_responses().owns("POST", "/v1/responses/compact"));
  EXPECT_TRUE(wire::openai_responses().owns("GET", "/v1/responses"));
  EXPECT_FALSE(wire::openai_responses().owns("POST", "/v1/chat/completions"));
  // A context-length refusal: as an error, or as the failed event that opens a stream.
  EXPECT_TRUE(wire::openai_responses().context_refusal(400, R"({"error":{"code":"context_length_exceeded"}})"));
  EXPECT_TRUE(wire::openai_responses().context_refusal(
      200, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"context_length_exceeded\"}}}\n\n"));
  EXPECT_FALSE(wire::openai_responses().context_refusal(200, "event: response.created\ndata: {}\n\n"));
}

// check on each hand-made body: the valid one passes; each other is refused with its rule named.
TEST(ResponsesRead, ABareItemsArrayMustBeTheWholeInput) {
  const std::string array = R"([{"role":"user","content":"hi"}])";
  auto alone = wire::openai_responses().read(array + "\n", "a.json");
  ASSERT_TRUE(alone) << alone.error().message;
  auto more = wire::openai_responses().read(array + R"(, "model": "m")", "b.json");
  ASSERT_FALSE(more);
  EXPECT_EQ(more.error().message, "b.json: offset 32: more after the input items array, which must be the whole input");
}

TEST(ResponsesRead, TheUpstreamHeldHistoryIsLookedForOnAnyBytesWithoutReadingPastThem) {
  // passed_through looks for previous_response_id before the body is parsed; on every cut of a
  // body (each its own allocation, so AddressSanitizer sees a read past it) it answers, and only
  // the whole body names the key.
  const std::string body = R"({"input":[{"role":"user","content":"hi"}],"store":[1,{"a":"b\"c"}],"previous_response_id":"resp_1"})";
  for (std::size_t n = 0; n < body.size(); ++n) {
    const std::string cut = body.substr(0, n);
    (void)wire::openai_responses().passed_through(cut);
  }
  EXPECT_TRUE(wire::openai_responses().passed_through(body).has_value());
  EXPECT_FALSE(wire::openai_responses().passed_through(R"({"input":[],"previous_response_id":null})").has_value());
}

TEST(ResponsesCheck, EachRuleBrokenByAHandMadeBodyIsNamedAndAValidOneRoundTripsThroughRun) {
  const std::string data = std::string(COMPACTOR_TEST_DATA_DIR) + "/responses/";
  const std::map<std::string, std::string> rules = {
      {"output_without_call.json", "pairing"},
      {"call_without_output.json", "pairing"},
      {"duplicate_item_id.json", "unique_item_ids"},
      {"duplicate_call_id.json", "unique_call_ids"},
      {"reasoning_without_following_item.json", "reasoning_followed"},
      {"instruction_inside_a_tool_pair.json", "inside a tool pair"},
  };
  auto valid = test::run_cli({"check", "--input", data + "valid.json"});
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
  for (const auto& [file, rule] : rules) {
    auto r = test::run_cli({"check", "--input", data + file});
    EXPECT_NE(r.exit_code, 0) << file;
    EXPECT_NE((r.out + r.err).find(rule), std::string::npos) << file << ": " << r.out << r.err;
    // Detected as a Responses body, as --input-format responses reads it.
    auto named = test::run_cli({"check", "--input", data + file, "--input-format", "responses"});
    EXPECT_EQ(named.exit_code, r.exit_code) << file;
  }
  // run with nothing to do writes the body back byte for byte.
  const fs::path dir = test::scratch_folder_until_exit("responses-run");
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 10000000}\narchive: {dir: " << (dir / "archive").string()
                                << "}\nplugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR << "\"]\npipeline:\n  - stage: micro\n";
  auto run = test::run_cli({"run", "--config", (dir / "c.yaml").string(), "--input", data + "valid.json", "--output", (dir / "out.json").string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::ifstream in(data + "valid.json"), out(dir / "out.json");
  std::string a((std::istreambuf_iterator<char>(in)), {}), b((std::istreambuf_iterator<char>(out)), {});
  EXPECT_EQ(a, b);
}

// The recorded Codex session imports as a Responses history and replays in bench with no failed
// call, priced as the GPT-5 model it used and metered with o200k.
TEST(CodexSession, ARecordedSessionImportsAndReplaysInBenchWithNoFailedCall) {
  const std::string session = std::string(COMPACTOR_TEST_DATA_DIR) + "/codex/rollout-codex-0.171-12-reads.jsonl";
  auto imported = test::run_cli({"import", "--input", session});
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  EXPECT_NE(imported.out.find("26 messages, 12 tool_uses, 0 repairs"), std::string::npos) << imported.out;
  const fs::path dir = test::scratch_folder_until_exit("codex-bench");
  fs::create_directories(dir / "corpus");
  fs::copy_file(session, dir / "corpus" / "codex.jsonl");
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: tokens, limit: 12000, target: 9000}\nmeter: {kind: o200k}\narchive: {dir: "
                                << (dir / "archive").string() << "}\nplugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR
                                << "\"]\npipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120}\n";
  auto bench = test::run_cli({"bench", "--corpus", (dir / "corpus").string(), "--config", (dir / "c.yaml").string(), "--out",
                              (dir / "out").string(), "--prices", std::string(COMPACTOR_TEST_DATA_DIR) + "/../../configs/prices.yaml"});
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  std::ifstream in(dir / "out" / "sessions.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  json::object r = json::parse(line).as_object();
  EXPECT_EQ(r.at("model"), "gpt-5.1-codex");
  EXPECT_EQ(r.at("meter"), "o200k");
  EXPECT_EQ(r.at("failures").to_number<std::uint64_t>(), 0u);
  EXPECT_GT(r.at("compactions").to_number<std::uint64_t>(), 0u);
  // 13 model calls, each a reasoning item and then a call or the final message.
  EXPECT_EQ(r.at("calls").to_number<std::uint64_t>(), 13u);
}

TEST(ResponsesPlacement, EntriesMaySitAnywhereOutsideAToolPairAndShareASlot) {
  const MessagePtr user = test::message_or_die(R"({"role":"user","content":"go"})");
  const MessagePtr call = test::message_or_die(R"({"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"t","input":{}}]})");
  const MessagePtr result = test::message_or_die(R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"x"}]})");
  const MessagePtr answer = test::message_or_die(R"({"role":"assistant","content":"done"})");
  const std::vector<MessagePtr> m = {user, call, result, answer};
  const auto rule = SystemEntryPlacement::outside_tool_pairs;
  EXPECT_TRUE(ConversationHost::valid_system_slot(m, 0, rule));
  EXPECT_TRUE(ConversationHost::valid_system_slot(m, 1, rule));
  EXPECT_FALSE(ConversationHost::valid_system_slot(m, 2, rule));  // between the call and its result
  EXPECT_TRUE(ConversationHost::valid_system_slot(m, 3, rule));
  EXPECT_TRUE(ConversationHost::valid_system_slot(m, 4, rule));  // after an assistant turn, last
  EXPECT_FALSE(ConversationHost::valid_system_slot(m, 4, SystemEntryPlacement::messages_api));
  auto frame = std::make_shared<ConversationFrame>();
  FrameLayout layout;
  layout.entry_placement = rule;
  ConversationHost::set_layout(*frame, std::move(layout));
  static const std::string entries = R"({"role":"developer","content":"a"}{"role":"developer","content":"b"})";
  frame->system_entries = {SystemEntry{std::string_view(entries).substr(0, 34), 0, ""}, SystemEntry{std::string_view(entries).substr(34), 0, ""}};
  Conversation c = ConversationHost::make(frame, m);
  EXPECT_EQ(c.system_slots(), (std::vector<std::size_t>{0, 0}));
  // Dropping the first exchange keeps both entries first, still two of them (never joined).
  Conversation later = c.with_messages({result, answer});
  EXPECT_EQ(later.system_slots(), (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(later.serialize().find("\"role\":\"system\""), std::string::npos);
}

}  // namespace
}  // namespace compactor
