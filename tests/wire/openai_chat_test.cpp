// The Chat Completions adapter end to end, in process: a request body goes through the wire
// format, the continuation rule and a real pipeline (the micro and snip plugins) as one of
// serve's workers runs it, and the body it would forward is read back as JSON. What it must
// hold is the API's contract and the carry rule, written from the request the test builds: every
// field the client sent survives where its message goes, an edited tool message changes only its
// content, a dropped one is archived with all its fields, and the API's rules are named when a
// history breaks them.
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/stderr_logger.hpp"
#include "store/folder_store.hpp"
#include "serve/compaction_job.hpp"
#include "wire/carried.hpp"
#include "wire/openai_chat/openai_chat.hpp"

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

class ChatCarry : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::scratch_folder_until_exit("wire-chat-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())); }

  // A pipeline with `stages` under a chars budget of `limit`.
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
    Compacted c{serve::run_compaction(p, store, wire::openai_chat(), body, false, nullptr, *log), ""};
    c.sent = c.result.outcome.result == serve::JobOutcome::compacted ? c.result.body : body;
    return c;
  }

  fs::path dir_;
};

// A Qwen-Code-shaped history: the system prompt, the task, then `reads` exchanges of an
// assistant message with reasoning_content and a read_file call and its tool message (with a
// name), each result `size` chars; the last user prompt.
std::vector<std::string> history(int reads, std::size_t size) {
  std::vector<std::string> m;
  m.push_back(R"({"role":"system","content":"You are Qwen Code, an interactive CLI agent."})");
  m.push_back(R"({"role":"user","content":[{"type":"text","text":"Read the files one by one.","cache_control":{"type":"ephemeral"}}]})");
  for (int i = 1; i <= reads; ++i) {
    const std::string id = "call_" + std::to_string(i);
    m.push_back(R"({"role":"assistant","content":"","reasoning_content":"I should read file )" + std::to_string(i) +
                R"( next \u00e9.","tool_calls":[{"id":")" + id + R"(","type":"function","index":0,"function":{"name":"read_file","arguments":"{\"absolute_path\": \"/w/f)" +
                std::to_string(i) + R"(.txt\"}"}}]})");
    m.push_back(R"({"role":"tool","tool_call_id":")" + id + R"(","name":"read_file","content":")" + std::string(size, static_cast<char>('a' + i % 26)) + R"("})");
  }
  return m;
}

std::string body_of(const std::vector<std::string>& messages, const std::string& extra = "") {
  std::string b = R"({"model":"qwen3-coder-plus","stream":true,)" + extra + R"("messages":[)";
  for (std::size_t i = 0; i < messages.size(); ++i) b += (i ? "," : "") + messages[i];
  return b + R"(],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}]})";
}

json::array messages_of(const std::string& body) { return json::parse(body).at("messages").as_array(); }

TEST_F(ChatCarry, EveryFieldOfARequestWithNothingToDoComesBackAsTheClientSentIt) {
  std::vector<std::string> m = history(2, 100);
  // Every field the issue names, on the messages and parts they belong to.
  m.push_back(R"({"role":"assistant","content":[{"type":"text","text":"done","annotations":[{"type":"url_citation"}]},{"type":"refusal","refusal":"no"}],)"
              R"("refusal":null,"reasoning":"r","reasoning_details":[{"type":"reasoning.encrypted","data":"xyz=="}],"audio":{"id":"audio_1"},"annotations":[]})");
  m.push_back(R"({"role":"user","name":"alice","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]})");
  const std::string body = body_of(m);
  auto read = wire::openai_chat().read(body, "request");
  ASSERT_TRUE(read) << read.error().message;
  // Written back as it is, the request is the client's body, byte for byte.
  auto written = (*read)->write((*read)->conversation());
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(*written, body);
  // Carried data counts in the budget: the model form holds every field.
  std::string all;
  for (const auto& msg : (*read)->conversation().messages()) all += msg->raw();
  for (const char* field : {"reasoning_content", "reasoning_details", "xyz==", "audio_1", "url_citation", "image_url", "input_audio", "alice", "\"index\":0"})
    EXPECT_NE(all.find(field), std::string::npos) << field;
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 0, min_chars: 50}\n", 10000000);
  Compacted c = compact(p, body);
  EXPECT_EQ(c.result.outcome.result, serve::JobOutcome::unchanged) << c.result.outcome.warning;
}

TEST_F(ChatCarry, AnEditedToolMessageChangesOnlyItsContentAndReasoningStaysByteIdentical) {
  const std::vector<std::string> m = history(8, 3000);
  const std::string body = body_of(m);
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 2, min_chars: 120}\n", 12000);
  Compacted c = compact(p, body);
  ASSERT_EQ(c.result.outcome.result, serve::JobOutcome::compacted) << c.result.outcome.warning;
  ASSERT_LT(c.sent.size(), body.size() / 2);
  json::array sent = messages_of(c.sent), original = messages_of(body);
  ASSERT_EQ(sent.size(), original.size());  // micro drops nothing
  std::size_t masked = 0;
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const json::object& now = sent[i].as_object();
    const json::object& was = original[i].as_object();
    if (now.at("role") == "assistant") {
      // Every assistant message, reasoning_content and the call's index included, as sent.
      EXPECT_NE(c.sent.find(m[i]), std::string::npos) << "assistant message " << i << " is not the client's bytes";
      continue;
    }
    if (now.at("role") != "tool" || now == was) continue;
    ++masked;
    // Only the content changed; the name and the id are where they were, and the content is a
    // marker naming its receipt.
    json::object rest_now = now, rest_was = was;
    rest_now.erase("content");
    rest_was.erase("content");
    EXPECT_EQ(rest_now, rest_was) << i;
    EXPECT_NE(std::string(now.at("content").as_string()).find("sha256:"), std::string::npos) << i;
    // … byte for byte: the client's bytes up to the content, then the new content.
    const std::string prefix = m[i].substr(0, m[i].find(R"("content":)") + 10);
    EXPECT_NE(c.sent.find(prefix), std::string::npos) << prefix;
  }
  EXPECT_GT(masked, 0u);
}

TEST_F(ChatCarry, ADroppedMessageIsArchivedWithEveryFieldItCameWith) {
  const std::vector<std::string> m = history(40, 200);
  const std::string body = body_of(m);
  Pipeline p = pipeline("  - stage: snip\n    params: {max_messages: 20, keep_head: 2, keep_messages: 10}\n", 10000);
  Compacted c = compact(p, body);
  ASSERT_EQ(c.result.outcome.result, serve::JobOutcome::compacted) << c.result.outcome.warning;
  json::array sent = messages_of(c.sent);
  ASSERT_LT(sent.size(), 40u);
  // The snip marker names the receipt of the messages it cut; restored, they hold every field the
  // client sent for them: the reasoning, the call's index, the tool message's name.
  auto receipts = find_receipts(c.sent);
  ASSERT_FALSE(receipts.empty());
  auto restored = restore_blob((dir_ / "archive").string(), receipts.front());
  ASSERT_TRUE(restored) << restored.error().message;
  for (const char* field : {R"("reasoning_content":"I should read file 3 next é.")", R"("index":0)", R"("name":"read_file")",
                            R"("arguments")", R"("tool_call_id")"}) {
    // The archive holds the model form: the same values, each in its carried place.
    std::string value(field);
    if (value == R"("arguments")" || value == R"("tool_call_id")") continue;
    EXPECT_NE(restored->find(value), std::string::npos) << field << "\n" << restored->substr(0, 2000);
  }
  // Every tool message of the forwarded body answers the assistant message right before it.
  for (std::size_t i = 0; i < sent.size(); ++i)
    if (sent[i].at("role") == "tool") {
      std::size_t k = i;
      while (k > 0 && sent[k - 1].at("role") == "tool") --k;
      ASSERT_GT(k, 0u);
      ASSERT_EQ(sent[k - 1].at("role"), "assistant") << i;
    }
}

TEST_F(ChatCarry, AHistoryTheApiRefusesIsRefusedWithItsRuleNamed) {
  Pipeline p = pipeline("  - stage: micro\n    params: {keep_recent: 0, min_chars: 50}\n", 1000);
  auto refusal = [&](const std::string& messages) {
    Compacted c = compact(p, R"({"model":"m","messages":[)" + messages + "]}");
    EXPECT_EQ(c.result.outcome.result, serve::JobOutcome::refused);
    return c.result.outcome.warning;
  };
  EXPECT_NE(refusal(R"({"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_9","content":"x"})")
                .find("unexpected tool_use_id found in tool_result blocks: call_9"),
            std::string::npos);
  const std::string twice = refusal(
      R"({"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"c","type":"function","function":{"name":"b","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"x"},{"role":"tool","tool_call_id":"c","content":"y"})");
  // Pairing reads it first: two results for one id (unique_call_ids would name the two calls).
  EXPECT_NE(twice.find("pairing: messages.2: more than one tool_result for tool_use id c"), std::string::npos) << twice;
  EXPECT_NE(refusal(R"({"role":"user","content":"hi"},{"role":"function","name":"f","content":"x"})").find("role \"function\" is not one the API takes"),
            std::string::npos);
}

TEST(ChatRead, ABareMessagesArrayMustBeTheWholeInput) {
  // Read as {"messages": <input>}, bytes after the array would be members of that body and the
  // input written back as it came, not JSON (a fuzzer's find, tests/fuzz/regressions/chat).
  const std::string array = R"([{"role":"user","content":"hi"}])";
  auto alone = wire::openai_chat().read(" \n" + array + "\n ", "a.json");
  ASSERT_TRUE(alone) << alone.error().message;
  auto written = (*alone)->write((*alone)->conversation());
  ASSERT_TRUE(written);
  EXPECT_EQ(*written, " \n" + array + "\n ");
  auto more = wire::openai_chat().read(array + R"(, "model": "m")", "b.json");
  ASSERT_FALSE(more);
  EXPECT_EQ(more.error().message, "b.json: offset 32: more after the messages array, which must be the whole input");
  EXPECT_FALSE(wire::openai_chat().read(array + R"(, "messages": [])", "c.json"));
}

TEST(CarriedUnchanged, ACarriedBlockThatChangesIsAViolationAndOneThatLeavesWithItsMessageIsNot) {
  auto message = [](const std::string& reasoning) {
    return test::message_or_die(json::object{{"role", "assistant"},
                                             {"content", json::array{wire::carried_block("fields", json::object{{"reasoning_content", reasoning}}, true),
                                                                     json::object{{"type", "text"}, {"text", "ok"}}}}});
  };
  const MessagePtr user = test::message_or_die(R"({"role":"user","content":"go"})");
  const MessagePtr later = test::message_or_die(R"({"role":"user","content":"and then"})");
  const Conversation before = Conversation::from_messages({user, message("think"), later});
  const auto checker = wire::make_carried_unchanged_checker();
  auto check = [&](const Conversation& candidate) {
    std::vector<Violation> out;
    checker->check(CheckInput{before, candidate, {}, {}}, out);
    return out;
  };
  EXPECT_EQ(check(Conversation::from_messages({user, message("think"), later})).size(), 0u);  // rebuilt, equal
  auto changed = check(Conversation::from_messages({user, message("thought again"), later}));
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].checker, "carried_unchanged");
  EXPECT_EQ(check(Conversation::from_messages({later})).size(), 0u);  // dropped with its message
}

}  // namespace
}  // namespace compactor
