// Importers on real logs from tests/data (counts cross-checked by tests/corpus/
// check_import_counts.py, which shares no code with the importer) and on synthetic histories
// for what the corpus lacks (a rewind, parallel OpenAI tool calls).
#include "support/test_support.hpp"

#include "model/active_request.hpp"
#include "loader/builtin_checkers.hpp"
#include "import/importers.hpp"
#include "wire/anthropic/claude_code_log.hpp"
#include "wire/input_document.hpp"
#include "wire/openai_chat/openai_log.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>

namespace compactor {
namespace {

namespace json = boost::json;

std::vector<Violation> check(const Conversation& c) {
  auto requests = find_active_request(c).texts;
  return run_checkers(make_builtin_checkers(), CheckInput{c, c, compute_protected_tail(c, 0), requests});
}

ImportResult import_or_die(const std::string& name, std::optional<std::string> format = std::nullopt) {
  auto r = wire::import_session(test::data_path(name), format);
  if (!r) throw std::runtime_error(r.error().message);
  return std::move(r->result);
}

TEST(ClaudeCodeImport, BrokenLinesAreSkippedAndCountedAndTheResultIsValid) {
  auto r = import_or_die("claude-code/f551142a-ef6a-46fd-a3bf-14a924370fb0.jsonl");
  EXPECT_EQ(r.report.format, "claude-code");
  // Counted independently by check_import_counts.py: 23 broken lines, first at 22, 51, 52…
  ASSERT_EQ(r.report.broken_lines.size(), 23u);
  EXPECT_EQ(std::vector<std::size_t>(r.report.broken_lines.begin(), r.report.broken_lines.begin() + 3),
            (std::vector<std::size_t>{22, 51, 52}));
  EXPECT_EQ(r.report.tool_uses_in_log, 48u);
  ASSERT_TRUE(r.conversation.has_value());
  EXPECT_EQ(r.report.tool_uses, 48u);  // no rewind: every logged call is in the history
  auto v = check(*r.conversation);
  EXPECT_TRUE(v.empty()) << v.front().to_string();
  // The redaction cut lines holding results: those calls are answered as lost, and listed.
  std::size_t lost = 0;
  for (const auto& repair : r.report.repairs) lost += repair.kind == "lost_result_answered";
  EXPECT_GT(lost, 0u);
  EXPECT_NE(r.conversation->serialize().find("[compactor import: the result of this tool call is not in the session log"),
            std::string::npos);
}

TEST(ClaudeCodeImport, AnImageInAToolResultIsKeptAndCountedAtTheEstimate) {
  auto r = import_or_die("claude-code/c10f5964-20bd-4783-aa1a-30b06c8a702a.jsonl");
  EXPECT_EQ(r.report.broken_lines.size(), 5u);
  EXPECT_EQ(r.report.tool_uses_in_log, 46u);
  ASSERT_TRUE(r.conversation.has_value());
  bool found = false;
  for (const MessagePtr& m : r.conversation->messages())
    for (const Block& b : m->blocks())
      if (b.kind() == BlockKind::tool_result && b.content() && b.content()->is_array())
        for (const auto& item : b.content()->get_array())
          if (item.is_object() && item.get_object().contains("type") && item.at("type") == "image") {
            found = true;
            // The base64 payload counts as 6,400 (kMediaBlockSize), whatever its length.
            std::size_t payload = item.at("source").at("data").as_string().size();
            EXPECT_EQ(m->bytes(), m->raw().size() - payload + kMediaBlockSize);
          }
  EXPECT_TRUE(found);
  EXPECT_TRUE(check(*r.conversation).empty());
}

TEST(ClaudeCodeImport, ASidechainFileIsItsOwnChain) {
  auto agent = import_or_die("claude-code/agent-a00ad96.jsonl");  // agent-*: the sub-agent chain
  ASSERT_TRUE(agent.conversation.has_value());
  EXPECT_EQ(agent.report.sidechain_skipped, 0u);
  EXPECT_TRUE(check(*agent.conversation).empty());
  // Read as a main session, every line is a sub-agent line: left out, and it imports empty.
  auto main = import_claude_code(test::read_file(test::data_path("claude-code/agent-a00ad96.jsonl")), "x", false);
  EXPECT_EQ(main.report.sidechain_skipped, 2u);
  EXPECT_TRUE(main.report.empty);
  EXPECT_FALSE(main.conversation.has_value());
}

TEST(ClaudeCodeImport, ARewoundSessionFollowsTheLeafsChain) {
  auto r = import_or_die("claude-code/rewind-synthetic.jsonl");
  ASSERT_TRUE(r.conversation.has_value());
  EXPECT_EQ(r.report.rewound_skipped, 2u);  // "delete them" and "Deleting." were abandoned
  std::string out = r.conversation->serialize();
  EXPECT_EQ(out.find("delete them"), std::string::npos);
  EXPECT_NE(out.find("no, just count them"), std::string::npos);
  EXPECT_EQ(r.conversation->size(), 6u);
  EXPECT_EQ(find_active_request(*r.conversation).text, "no, just count them");
  EXPECT_TRUE(check(*r.conversation).empty());
}

const char* kParallel = R"J([
  {"role": "system", "content": "You are a coding agent."},
  {"role": "user", "content": "Check both files."},
  {"role": "assistant", "content": null, "thought": "two reads", "tool_calls": [
    {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.py\", \"lines\": [1, 2.5]}"}},
    {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"b.py\"}"}}]},
  {"role": "tool", "tool_call_id": "call_a", "content": "print('a')"},
  {"role": "tool", "tool_call_id": "call_b", "content": "print('b')"},
  {"role": "assistant", "content": "Both print."}
])J";

TEST(OpenAiImport, RoundTripKeepsIdsNamesArgumentsAndResults) {
  auto r = import_openai(kParallel, "parallel.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->conversation.has_value());
  EXPECT_EQ(r->conversation->format(), InputFormat::request_body);  // the system prompt went to `system`
  EXPECT_EQ(r->report.fields_dropped, 1u);                          // "thought"
  EXPECT_TRUE(check(*r->conversation).empty());
  const Message& calls = (*r->conversation)[1];
  ASSERT_EQ(calls.blocks().size(), 2u);
  EXPECT_EQ(calls.blocks()[0].id(), "call_a");
  EXPECT_EQ(*calls.blocks()[0].input(), json::parse(R"({"path": "a.py", "lines": [1, 2.5]})"));
  const Message& results = (*r->conversation)[2];
  EXPECT_EQ(results.blocks().size(), 2u);  // both results in one user message

  json::value back = json::parse(export_openai(*r->conversation));
  json::value original = json::parse(kParallel);
  const auto& a = back.as_array();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].at("role"), "system");
  EXPECT_EQ(a[0].at("content"), "You are a coding agent.");
  for (std::size_t k = 0; k < 2; ++k) {
    const auto& got = a[2].at("tool_calls").as_array()[k];
    const auto& want = original.as_array()[2].at("tool_calls").as_array()[k];
    EXPECT_EQ(got.at("id"), want.at("id"));
    EXPECT_EQ(got.at("function").at("name"), want.at("function").at("name"));
    // Arguments compared as JSON values, not as strings.
    EXPECT_EQ(json::parse(got.at("function").at("arguments").as_string()), json::parse(want.at("function").at("arguments").as_string()));
  }
  EXPECT_EQ(a[3].at("tool_call_id"), "call_a");
  EXPECT_EQ(a[3].at("content"), "print('a')");
  EXPECT_EQ(a[4].at("tool_call_id"), "call_b");
  EXPECT_EQ(a[5].at("content"), "Both print.");
}

TEST(OpenAiImport, BadArgumentsAreAnErrorNamingTheMessage) {
  auto r = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{oops"}}]}])",
                         "bad.json");
  ASSERT_FALSE(r.ok());
  // Byte 110 of the file is where the arguments string starts; "{oops" breaks at its byte 1.
  EXPECT_EQ(r.error().message.rfind("bad.json:1:111 (byte 110): messages.1.tool_calls.0.function.arguments is not JSON: ", 0), 0u)
      << r.error().message;
  EXPECT_NE(r.error().message.find(" at byte 1 of the string \"{oops\""), std::string::npos) << r.error().message;
}

// JSON nested `levels` deep: {"a":{"a":…{}}}.
std::string nested(std::size_t levels) {
  std::string s;
  for (std::size_t i = 0; i < levels; ++i) s += "{\"a\":";
  s += "{}";
  s.append(levels, '}');
  return s;
}

// Boost.JSON's parse refuses more than 32 levels by default. A log line holding a tool input 40
// levels deep was "broken" and skipped, taking its tool call with it, though the conversation
// reader (and the API) take up to 256 levels; every importer now reads what the reader reads.
TEST(ClaudeCodeImport, ALineNestedDeeperThanBoostJsonsDefaultIsKept) {
  const std::string log =
      R"({"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}})"
      "\n"
      R"({"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"X","input":)" +
      nested(40) + R"(}]}})" + "\n" +
      R"({"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}})" +
      "\n";
  ImportResult r = import_claude_code(log, "deep.jsonl", false);
  EXPECT_TRUE(r.report.broken_lines.empty());
  EXPECT_TRUE(r.report.repairs.empty());
  ASSERT_TRUE(r.conversation.has_value());
  ASSERT_EQ(r.conversation->size(), 3u);
  EXPECT_EQ(*(*r.conversation)[1].blocks()[0].input(), json::parse(nested(40), {}, {.max_depth = 64}));
  EXPECT_EQ(r.report.summary_line(), "3 messages, 1 tool_use, 0 repairs");
}

// Detection does not take a leading system message for OpenAI (in Anthropic messages it is a
// mistake to report), but the error says what to give when the file is an OpenAI chat.
TEST(ImportDetection, AChatStartingWithItsSystemMessageIsAnErrorThatNamesTheOpenAiFormat) {
  test::ScratchFolder scratch("detect");
  const std::string file = (scratch.path() / "chat.json").string();
  std::ofstream(file) << R"([{"role":"system","content":"be brief"},{"role":"user","content":"hi"}])";
  auto detected = wire::import_session(file, std::nullopt);
  ASSERT_FALSE(detected.ok());
  const std::string hint = "\n" + file + ": an OpenAI chat history starts with its system message; if this is one, give "
                           "--input-format openai";
  const std::string& said = detected.error().message;
  EXPECT_NE(said.find("(rule: never first)"), std::string::npos) << said;
  ASSERT_GE(said.size(), hint.size());
  EXPECT_EQ(said.substr(said.size() - hint.size()), hint) << said;  // the last line
  auto anthropic = wire::import_session(file, "anthropic");
  ASSERT_FALSE(anthropic.ok());
  EXPECT_EQ(anthropic.error().message.find("--input-format"), std::string::npos);  // asked for, not guessed
  auto openai = wire::import_session(file, "openai");
  ASSERT_TRUE(openai.ok()) << openai.error().message;
  EXPECT_EQ(openai->result.conversation->format(), InputFormat::request_body);
}

// A line is read as the conversation reader reads a document: a key given twice makes it broken
// (Boost.JSON kept the last "type" and read the line as another kind); a number past 18 digits,
// which the one-pass parser leaves to Boost.JSON, is still read; a value that goes on past its
// line's end is broken.
TEST(ClaudeCodeImport, ALineIsReadUnderTheReadersRules) {
  const std::string user = R"({"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"go"}})";
  const std::string twice = R"({"type":"user","type":"assistant","uuid":"u2","parentUuid":"u1","message":{"role":"user","content":"x"}})";
  const std::string big = R"({"type":"assistant","uuid":"a1","parentUuid":"u1","n":123456789012345678901234,"message":{"id":"m1","role":"assistant","content":"done"}})";
  const std::string split = "{\"type\":\"user\",\n\"uuid\":\"u3\"}";
  ImportResult r = import_claude_code(user + "\n" + twice + "\n" + big + "\n" + split + "\n", "rules.jsonl", false);
  EXPECT_EQ(r.report.broken_lines, (std::vector<std::size_t>{2, 4, 5}));
  // The first one's reason is said: a key given twice at byte 15 of line 2.
  EXPECT_EQ(r.report.first_broken_why, "line 2: duplicate object key \"type\" (byte 15 of the line)");
  EXPECT_NE(r.report.summary_line().find("3 broken lines skipped (first: line 2: duplicate object key"), std::string::npos)
      << r.report.summary_line();
  ASSERT_TRUE(r.conversation.has_value());
  ASSERT_EQ(r.conversation->size(), 2u);
  EXPECT_EQ(r.conversation->serialize(),
            "[\n{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"go\"}]},\n"
            "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}\n]\n");
}

TEST(OpenAiImport, NestingIsReadUpToTheReadersLimitAndRefusedPastItWithItsPlace) {
  auto deep = import_openai(R"({"messages":[{"role":"user","content":"x"}],"meta":)" + nested(100) + "}", "deep.json");
  ASSERT_TRUE(deep.ok()) << deep.error().message;
  EXPECT_EQ(deep->report.fields_dropped, 0u);
  auto too_deep = import_openai(R"({"messages":[{"role":"user","content":"x"}],"meta":)" + nested(300) + "}", "deep.json");
  ASSERT_FALSE(too_deep.ok());
  // The 257th level opens at byte 51 + 5 × 255 (the "meta" value starts at byte 51).
  EXPECT_EQ(too_deep.error().message, "deep.json:1:1327 (byte 1326): nesting deeper than the limit of 256");
}

// It said "deep.json: not valid JSON: syntax error"; the error now says where, as `check` does.
TEST(OpenAiImport, InvalidJsonIsAnErrorAtItsLineAndColumn) {
  auto r = import_openai("[{\"role\":\"user\",\"content\":\"hi\"},\n{\"role\":\"assistant\" \"content\":\"x\"}]", "bad.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "bad.json:2:21 (byte 53): expected ',' or '}' in object");
  auto arguments = import_openai(
      R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\": tru}"}}]}])",
      "bad.json");
  ASSERT_FALSE(arguments.ok());
  EXPECT_EQ(arguments.error().message,
            "bad.json:1:111 (byte 110): messages.1.tool_calls.0.function.arguments is not JSON: invalid literal (expected true) "
            "at byte 6 of the string \"{\\\"a\\\": tru}\"");
}

// A user trial found these quietly emptied or dropped: each is now refused where it is, or counted.
TEST(OpenAiImport, ContentOfTheWrongTypeIsRefusedAndAPartNotCarriedIsARepair) {
  auto number = import_openai(R"({"history":[{"role":"user","content":"x"},{"role":"user","content":5}]})", "t.traj");
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.error().message, "t.traj: history.1.content must be a string or an array of parts, got number");
  auto null_user = import_openai(R"([{"role":"user","content":null}])", "n.json");
  ASSERT_FALSE(null_user.ok());
  EXPECT_EQ(null_user.error().message, "n.json: messages.0.content: a user message needs content, got null");
  auto bad_text = import_openai(R"([{"role":"user","content":[{"type":"text","text":5}]}])", "p.json");
  ASSERT_FALSE(bad_text.ok());
  EXPECT_EQ(bad_text.error().message, "p.json: messages.0.content.0.text must be a string, got number");
  auto calls = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":"ls"}])", "c.json");
  ASSERT_FALSE(calls.ok());
  EXPECT_EQ(calls.error().message, "c.json: messages.1.tool_calls must be an array, got string");

  auto image = import_openai(
      R"([{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}])", "i.json");
  ASSERT_TRUE(image.ok()) << image.error().message;
  ASSERT_EQ(image->report.repairs.size(), 1u);
  EXPECT_EQ(image->report.repairs[0].kind, "part_dropped");
  EXPECT_EQ(image->report.repairs[0].detail, "i.json: messages.0.content.1 (image_url) is not carried");

  // A field of the wrong type was read as empty: a result's id became "" (the result then an
  // orphan, dropped, and its call answered as lost), a role 5 was 'unknown role ""'.
  auto id = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},)"
                          R"({"role":"tool","tool_call_id":5,"content":"out"}])", "id.json");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().message, "id.json: messages.2.tool_call_id must be a string, got number");
  auto role = import_openai(R"([{"role":5,"content":"x"}])", "r.json");
  ASSERT_FALSE(role.ok());
  EXPECT_EQ(role.error().message, "r.json: messages.0.role must be a string, got number");
  // Empty arguments become an empty input, counted as null ones are.
  auto empty = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":""}}]},)"
                             R"({"role":"tool","tool_call_id":"c1","content":"out"}])", "e.json");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  ASSERT_EQ(empty->report.repairs.size(), 1u);
  EXPECT_EQ(empty->report.repairs[0].detail, "tool call c1 has empty function.arguments; its input is {}");
}

// Boost.JSON keeps the last of a key given twice; the arguments are refused as the reader refuses
// such a document.
TEST(OpenAiImport, ArgumentsWithAKeyGivenTwiceAreRefused) {
  auto r = import_openai(
      R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"p\": 1, \"p\": 2}"}}]}])",
      "dup.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("function.arguments is not JSON: duplicate object key \"p\" at byte 9 of the string"), std::string::npos)
      << r.error().message;
}

// The string's start is shown escaped: its newlines cannot split the error into several lines.
TEST(OpenAiImport, TheArgumentsInAnErrorStayOnOneLine) {
  auto r = import_openai(
      R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\n.\n}\u001b[31m"}}]}])",
      "nl.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\x1b'), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(R"("{\n.\n}\u001b[31m")"), std::string::npos) << r.error().message;
  // DEL, a C1 control (U+0085) and U+2028 too: terminals act on them or break the line there.
  auto wide = import_openai(
      "[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\","
      "\"arguments\":\"{\x7f\xc2\x85\xe2\x80\xa8\"}}]}]",
      "wide.json");
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message.find(R"("{\u007f\u0085\u2028")"), std::string::npos) << wide.error().message;
  EXPECT_EQ(wide.error().message.find('\x7f'), std::string::npos);
}

// Arguments given as an object, a number or null all once became input {} with "0 repairs". An
// object is kept, null or nothing is an empty input counted as a repair, and anything else is
// refused naming the call.
TEST(OpenAiImport, ArgumentsAsAnObjectAreKept) {
  auto r = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"path":"a.py","n":2}}}]},{"role":"tool","tool_call_id":"c","content":"ok"}])",
                         "object.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*(*r->conversation)[1].blocks()[0].input(), json::parse(R"({"path":"a.py","n":2})"));
  EXPECT_TRUE(r->report.repairs.empty());
}

TEST(OpenAiImport, NullOrMissingArgumentsAreARepair) {
  auto r = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":null}},{"id":"c2","function":{"name":"g"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"tool","tool_call_id":"c2","content":"ok"}])",
                         "null.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(check(*r->conversation).empty());
  ASSERT_EQ(r->report.repairs.size(), 2u);
  EXPECT_EQ(r->report.repairs[0].kind, "missing_arguments_emptied");
  EXPECT_EQ(r->report.repairs[0].detail, "tool call c1 has null function.arguments; its input is {}");
  EXPECT_EQ(r->report.repairs[1].detail, "tool call c2 has no function.arguments; its input is {}");
}

TEST(OpenAiImport, ArgumentsOfAnotherTypeAreRefused) {
  auto r = import_openai(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":42}}]}])",
                         "number.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "number.json: messages.1.tool_calls.0.function.arguments must be a JSON string or object, got number");
}

TEST(OpenAiImport, AReusedCallIdIsRewrittenWithItsResult) {
  auto r = import_openai(R"([{"role":"user","content":"x"},
    {"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"one"},
    {"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"two"}])",
                         "dup.json");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(check(*r->conversation).empty());
  EXPECT_EQ((*r->conversation)[3].blocks()[0].id(), "c1_2");
  EXPECT_EQ((*r->conversation)[4].blocks()[0].tool_use_id(), "c1_2");
  ASSERT_EQ(r->report.repairs.size(), 1u);
  EXPECT_EQ(r->report.repairs[0].kind, "duplicate_id_rewritten");
}

TEST(OpenAiImport, RealTrajectory) {
  auto r = import_or_die("openai/function_calling_simple.traj");
  EXPECT_EQ(r.report.format, "openai");
  EXPECT_EQ(r.report.tool_uses, 5u);  // counted independently: 5 tool calls
  ASSERT_TRUE(r.conversation.has_value());
  EXPECT_TRUE(check(*r.conversation).empty());
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// A request body's system entries go out to OpenAI as system messages at their places.
TEST(ExportOpenAi, SystemEntriesBecomeSystemMessagesInPlace) {
  auto c = test::parse_or_die(
      R"({"system":"top","messages":[{"role":"user","content":"a"},{"role":"system","content":[{"type":"text","text":"S1"}]},)"
      R"({"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"system","content":"S2"}]})");
  boost::json::value back = boost::json::parse(export_openai(c));
  EXPECT_EQ(back, boost::json::parse(R"([{"role":"system","content":"top"},{"role":"user","content":"a"},)"
                                     R"({"role":"system","content":"S1"},{"role":"assistant","content":"b"},)"
                                     R"({"role":"user","content":"c"},{"role":"system","content":"S2"}])"));
}

// What the OpenAI form has no place for is counted, so that `import --output-format openai` says it.
TEST(ExportOpenAi, WhatTheFormCannotCarryIsCounted) {
  auto c = test::parse_or_die(
      R"([{"role":"user","content":"look"},)"
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t1","name":"shot","input":{}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"here"},)"
      R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]},)"
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"ok","signature":"s"},{"type":"text","text":"done"}]}])");
  std::map<std::string, std::size_t> left_out;
  boost::json::value back = boost::json::parse(export_openai(c, &left_out));
  EXPECT_EQ(left_out, (std::map<std::string, std::size_t>{
                          {"image parts of tool results", 1}, {"is_error flags of tool results", 1}, {"thinking blocks", 2}}));
  EXPECT_EQ(back, boost::json::parse(R"([{"role":"user","content":"look"},)"
                                     R"({"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"shot","arguments":"{}"}}]},)"
                                     R"({"role":"tool","tool_call_id":"t1","content":"here"},{"role":"assistant","content":"done"}])"));
}

}  // namespace
}  // namespace compactor
