// Each checker on small hand-made conversations: what it catches, in what words, and what it
// must let through.
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "loader/builtin_checkers.hpp"
#include "compactor/message_edit.hpp"
#include "host/run_report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace compactor {
namespace {

std::vector<std::string> lines(const std::vector<Violation>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.to_string());
  return out;
}

std::vector<std::string> check_one(const std::string& json) {
  auto c = test::parse_or_die(json);
  return lines(run_checkers(make_builtin_checkers(), CheckInput{c, c, compute_protected_tail(c, 0), {}}));
}

const char* kUse1 = R"({"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]})";
const char* kRes1 = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]})";
const char* kAsk = R"({"role":"user","content":"do it"})";
std::string kUse1_2() { return R"({"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{}}]})"; }
std::string kRes1_2() { return R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"r2"}]})"; }

std::string conv(std::initializer_list<std::string> messages) {
  std::string out = "[";
  for (const auto& m : messages) out += (out.size() > 1 ? "," : "") + m;
  return out + "]";
}

// A checker may build a violation in a variable and say where later: at() and with_ids() change
// the variable (and chain), as they build a temporary.
TEST(Violation, WhereIsSaidOnAVariableAsOnATemporary) {
  Violation v = Violation::of("my_rule", "two results\nfor one call");
  v.at(3).with_ids({"toolu_1"});
  EXPECT_EQ(v.message_index, std::optional<std::size_t>(3));
  EXPECT_EQ(v.ids, std::vector<std::string>{"toolu_1"});
  EXPECT_EQ(v.to_string(), "my_rule: messages.3: two results\\nfor one call");
  Violation t = Violation::of("my_rule", "x").at(1).with_ids({"a", "b"});
  EXPECT_EQ(t.to_string(), "my_rule: messages.1: x");
  EXPECT_EQ(t.ids.size(), 2u);
}

// A violation from a built-in rule carries the rule's name (Checker::name() is the name a checker
// was made under).
TEST(StructureChecker, AMemberTheApiRefusesInABlockIsNamedWithItsRule) {
  Conversation c = test::parse_or_die(R"([{"role":"user","content":[{"type":"text","text":"hi","name":"ana"}]},
    {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{},"index":0,"caller":{"type":"direct"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok","extra":1}]},
      {"type":"server_tool_use_of_the_future","anything":true}]}])");
  auto v = run_checkers(make_input_checkers(), CheckInput{c, c, compute_protected_tail(c, 0), {}});
  std::vector<std::string> lines;
  for (const Violation& x : v) lines.push_back(x.to_string());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "structure: messages.0: content.0.text.name: Extra inputs are not permitted (rule: a text block has "
                       "only type, text, cache_control and citations)",
                       "structure: messages.1: content.0.tool_use.index: Extra inputs are not permitted (rule: a tool_use "
                       "block has only type, id, name, input, cache_control and caller)",
                       "structure: messages.2: content.0.content.0.text.extra: Extra inputs are not permitted (rule: a text "
                       "block has only type, text, cache_control and citations)"}));
}

TEST(PairingChecker, AcceptsAnsweredCalls) {
  EXPECT_TRUE(check_one(conv({kAsk, kUse1, kRes1})).empty());
  // A text-only assistant message before the calling one is fine: only the calling message needs
  // its results in the very next message.
  std::string split = conv({kAsk, R"({"role":"assistant","content":[{"type":"text","text":"a"}]})",
                            R"({"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"R","input":{}},{"type":"tool_use","id":"t2","name":"R","input":{}}]})",
                            R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"x"},{"type":"tool_result","tool_use_id":"t1","content":"y"},{"type":"text","text":"more"}]})",
                            R"({"role":"user","content":"and then"})"});
  EXPECT_TRUE(check_one(split).empty());
}

// The API reads pairing per message, before joining same-role messages.
TEST(PairingChecker, SplitResultsAreRefused) {
  std::string use_both = R"({"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"R","input":{}},{"type":"tool_use","id":"t2","name":"R","input":{}}]})";
  EXPECT_EQ(check_one(conv({kAsk, use_both, kRes1, kRes1_2()})),
            (std::vector<std::string>{
                "pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: t2",
                "pairing: messages.3: unexpected tool_use_id found in tool_result blocks: t2. Each tool_result block must have a corresponding tool_use block in the previous message"}));
}

TEST(PairingChecker, SplitCallsAreRefused) {
  std::string both = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"},{"type":"tool_result","tool_use_id":"t2","content":"r2"}]})";
  EXPECT_EQ(check_one(conv({kAsk, kUse1, kUse1_2(), both})),
            (std::vector<std::string>{
                "pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: t1",
                "pairing: messages.3: unexpected tool_use_id found in tool_result blocks: t1. Each tool_result block must have a corresponding tool_use block in the previous message"}));
}

TEST(PairingChecker, MissingResult) {
  EXPECT_EQ(check_one(conv({kAsk, kUse1, kAsk})),
            std::vector<std::string>{"pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: t1"});
}

TEST(PairingChecker, PendingAtTheEnd) {
  EXPECT_EQ(check_one(conv({kAsk, kUse1})),
            std::vector<std::string>{"pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: t1"});
}

TEST(PairingChecker, ResultAfterASeparateTextMessageAnswersNothing) {
  EXPECT_EQ(check_one(conv({kAsk, kUse1, kAsk, kRes1})),
            (std::vector<std::string>{
                "pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: t1",
                "pairing: messages.3: unexpected tool_use_id found in tool_result blocks: t1. Each tool_result block must have a corresponding tool_use block in the previous message"}));
}

TEST(PairingChecker, UnknownIdAndDuplicateResult) {
  EXPECT_EQ(check_one(conv({kAsk, kUse1, R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t9","content":"b"},{"type":"tool_result","tool_use_id":"t1","content":"c"}]})"})),
            (std::vector<std::string>{
                "pairing: messages.2: unexpected tool_use_id found in tool_result blocks: t9. Each tool_result block must have a corresponding tool_use block in the previous message",
                "pairing: messages.2: more than one tool_result for tool_use id t1"}));
}

TEST(PairingChecker, ServerToolsAreAnsweredInTheirOwnTurn) {
  EXPECT_TRUE(check_one(conv({kAsk, R"({"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[]},{"type":"text","text":"found"}]})"})).empty());
  EXPECT_EQ(check_one(conv({kAsk, R"({"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}]})", kAsk})),
            std::vector<std::string>{"pairing: messages.1: server tool use s1 has no result in the same assistant message"});
}

TEST(StructureChecker, FirstMessageMustBeUser) {
  EXPECT_EQ(check_one(conv({R"({"role":"assistant","content":"hi"})", kAsk})),
            std::vector<std::string>{"structure: messages.0: the first message must have role \"user\", got \"assistant\""});
}

TEST(UniqueIdsChecker, DuplicateMissingAndMalformedIds) {
  std::string dup = conv({kAsk, kUse1, kRes1, kUse1, kRes1});
  EXPECT_EQ(check_one(dup), std::vector<std::string>{"unique_ids: messages.3: tool_use id t1 is already used at messages.1"});
  auto no_id = check_one(conv({kAsk, R"({"role":"assistant","content":[{"type":"tool_use","name":"R","input":{}}]})", kAsk}));
  ASSERT_FALSE(no_id.empty());
  EXPECT_EQ(no_id.back(), "unique_ids: messages.1: tool_use has no string \"id\"");
  auto dotted = check_one(conv({kAsk, R"({"role":"assistant","content":[{"type":"tool_use","id":"call.1","name":"R","input":{}}]})",
                                R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"call.1","content":"r"}]})"}));
  EXPECT_EQ(dotted, std::vector<std::string>{"unique_ids: messages.1: tool_use id \"call.1\" does not match ^[a-zA-Z0-9_-]+$"});
}

struct Pair {
  Conversation before;
  Conversation after;
};

// `before` parsed; `after` the same conversation with message `index` replaced.
Pair edit(const std::string& json, std::size_t index, const std::string& replacement) {
  auto before = test::parse_or_die(json);
  auto messages = before.messages();
  messages[index] = test::message_or_die(replacement);
  auto after = before.with_messages(messages);
  return {before, after};
}

// Runs one checker, so each test sees only the rule it is about.
std::vector<std::string> check_pair(std::string_view checker, const Pair& p, std::size_t exchanges = 0,
                                    std::string_view request = "", bool may_touch_tail = false) {
  CheckInput in{p.before, p.after, compute_protected_tail(p.before, exchanges), {std::string(request)}};
  in.may_touch_tail = may_touch_tail;
  std::vector<CheckerPtr> one;
  one.push_back(make_builtin_checker(checker));
  return lines(run_checkers(one, in));
}

TEST(PairsUnchangedChecker, InputNameAndIsErrorStayButContentMayChange) {
  std::string base = conv({kAsk, kUse1, kRes1, kAsk});
  EXPECT_TRUE(check_pair("pairs_unchanged", edit(base, 2, R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[removed]"}]})")).empty());
  EXPECT_EQ(check_pair("pairs_unchanged", edit(base, 1, R"({"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"x":1}}]})")),
            std::vector<std::string>{"pairs_unchanged: messages.1: tool_use t1 changed its input"});
  EXPECT_EQ(check_pair("pairs_unchanged", edit(base, 2, R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r","is_error":true}]})")),
            std::vector<std::string>{"pairs_unchanged: messages.2: tool_result for t1 changed is_error from false to true"});
}

TEST(ThinkingUnchangedChecker, EditedThinkingIsCaught) {
  std::string think = R"({"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"S1"},{"type":"text","text":"ok"}]})";
  std::string base = conv({kAsk, think, kAsk});
  EXPECT_EQ(check_pair("thinking_unchanged", edit(base, 1, R"({"role":"assistant","content":[{"type":"thinking","thinking":"other plan","signature":"S1"},{"type":"text","text":"ok"}]})")),
            std::vector<std::string>{"thinking_unchanged: messages.1: thinking block was modified or is not from the input"});
  // Editing the text next to an unchanged thinking block is fine for this checker.
  EXPECT_TRUE(check_pair("thinking_unchanged", edit(base, 1, R"({"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"S1"},{"type":"text","text":"k"}]})")).empty());
}

// The API's own server-side compaction returns a `compaction` block (the summary that stands for
// everything before it): carried as it came, never edited.
TEST(ThinkingUnchangedChecker, TheApisCompactionBlockIsNeverEdited) {
  std::string compaction = R"({"role":"assistant","content":[{"type":"compaction","content":"Summary: the parser is half ported."},{"type":"text","text":"ok"}]})";
  std::string base = conv({kAsk, compaction, kAsk});
  EXPECT_EQ(check_pair("thinking_unchanged", edit(base, 1, R"({"role":"assistant","content":[{"type":"compaction","content":"Summary: shorter."},{"type":"text","text":"ok"}]})")),
            std::vector<std::string>{"thinking_unchanged: messages.1: compaction block was modified or is not from the input"});
  EXPECT_TRUE(check_pair("thinking_unchanged", edit(base, 1, R"({"role":"assistant","content":[{"type":"compaction","content":"Summary: the parser is half ported."},{"type":"text","text":"k"}]})")).empty());
}

TEST(ThinkingUnchangedChecker, OpenToolLoopKeepsItsThinking) {
  std::string think_use = R"({"role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"S1"},{"type":"tool_use","id":"t1","name":"Read","input":{}}]})";
  std::string base = conv({kAsk, think_use, kRes1});
  EXPECT_EQ(check_pair("thinking_unchanged", edit(base, 1, kUse1)),
            std::vector<std::string>{"thinking_unchanged: thinking block of input messages.1, the last assistant turn of an open tool loop, was dropped"});
}

TEST(RecentIntactChecker, TailIsVerbatimUnlessTheStageMayPlaceReceipts) {
  std::string base = conv({kAsk, kUse1, kRes1});
  std::string marker = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[archived sha256:ab]"}]})";
  EXPECT_EQ(check_pair("recent_intact", edit(base, 2, marker), 1),
            std::vector<std::string>{"recent_intact: messages.2: a message of the protected tail was modified (the last 1 exchange(s), input messages.1 onwards)"});
  EXPECT_TRUE(check_pair("recent_intact", edit(base, 2, marker), 1, "", /*may_touch_tail=*/true).empty());
  // Even a stage that may touch the tail may not change anything but result content.
  std::string flipped = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[archived]","is_error":true}]})";
  auto v = check_pair("recent_intact", edit(base, 2, flipped), 1, "", true);
  EXPECT_NE(std::find(v.begin(), v.end(), "recent_intact: messages.2: a message of the protected tail was modified (the last 1 exchange(s), input messages.1 onwards)"), v.end());
}

TEST(RequestKeptChecker, RequestMayMoveIntoASummaryButNotDisappear) {
  std::string base = conv({R"({"role":"user","content":"fix the build"})", kUse1, kRes1});
  EXPECT_TRUE(check_pair("request_kept", edit(base, 0, R"({"role":"user","content":"Request: fix the build\n[summary]"})"), 0, "fix the build").empty());
  EXPECT_EQ(check_pair("request_kept", edit(base, 0, R"({"role":"user","content":"fix it"})"), 0, "fix the build"),
            std::vector<std::string>{"request_kept: the active request is no longer in the conversation: \"fix the build\""});
}

TEST(NoGrowthChecker, LargerCandidateIsCaught) {
  std::string base = conv({kAsk, kUse1, kRes1});
  auto v = check_pair("no_growth", edit(base, 0, R"({"role":"user","content":"do it, and more"})"));
  EXPECT_EQ(v, std::vector<std::string>{"no_growth: the candidate is larger than its input: 213 > 203 chars"});
}

std::vector<std::string> check_archived(const Pair& p, const ArchiveStore& archive) {
  CheckInput in{p.before, p.after, compute_protected_tail(p.before, 0), {}};
  in.archive = &archive;
  std::vector<CheckerPtr> one;
  one.push_back(make_builtin_checker("archived"));
  return lines(run_checkers(one, in));
}

// A scratch archive folder (put() writes blobs; never committed, so the run's manifest is what the
// checker reads), removed with the test.
struct ScratchArchive {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("compactor-archived-checker-" + std::to_string(::getpid()) + "-" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  ScratchArchive() { std::filesystem::remove_all(dir); }
  ~ScratchArchive() { std::filesystem::remove_all(dir); }
};

TEST(ArchivedChecker, RemovedContentNeedsAReceiptHoldingTheExactBytes) {
  std::string base = conv({kAsk, kUse1, R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"long \u00e9 output"}]})", kAsk});
  ScratchArchive scratch;
  ArchiveStore archive(scratch.dir.string());
  auto before = test::parse_or_die(base);
  std::string original(raw_block_field(before[2], 0, "content"));
  EXPECT_EQ(original, "\"long \\u00e9 output\"");  // the input's own bytes, escape and all
  std::string receipt = receipt_of(original);
  std::string marker = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[archived as )" + receipt + R"(]"}]})";
  // Not archived yet: the receipt names nothing in this run's archive.
  EXPECT_EQ(check_archived(edit(base, 2, marker), archive),
            std::vector<std::string>{"archived: messages.2: tool_result t1: content was shortened or removed, but no receipt in it archives the original"});
  ASSERT_TRUE(archive.put(original).ok());
  EXPECT_TRUE(check_archived(edit(base, 2, marker), archive).empty());
  // The right receipt for other bytes is not enough.
  ASSERT_TRUE(archive.put("\"something else\"").ok());
  std::string wrong = R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[archived as )" + receipt_of("\"something else\"") + R"(]"}]})";
  EXPECT_EQ(check_archived(edit(base, 2, wrong), archive).size(), 1u);
}

TEST(ArchivedChecker, DroppedMessagesMustBeInANamedSnapshot) {
  auto before = test::parse_or_die(conv({kAsk, kUse1, kRes1, kUse1_2(), kRes1_2(), kAsk}));
  ScratchArchive scratch;
  ArchiveStore archive(scratch.dir.string());
  std::string jsonl = std::string(before[1].raw()) + "\n" + std::string(before[2].raw()) + "\n";
  std::string receipt = receipt_of(jsonl);
  auto marker = test::message_or_die(R"({"role":"user","content":"[snipped: )" + receipt + R"(]"})");
  std::vector<MessagePtr> kept = {before.messages()[0], marker, before.messages()[3], before.messages()[4], before.messages()[5]};
  Pair p{before, before.with_messages(kept)};
  EXPECT_EQ(check_archived(p, archive), (std::vector<std::string>{
                                            "archived: messages.1: input messages.1 was dropped, but no receipt in the candidate archives it",
                                            "archived: messages.2: input messages.2 was dropped, but no receipt in the candidate archives it"}));
  ASSERT_TRUE(archive.put(jsonl).ok());
  EXPECT_TRUE(check_archived(p, archive).empty());
}

TEST(CacheControlChecker, AStageNeverAddsABreakpoint) {
  std::string base = conv({kAsk, kUse1, kRes1, kAsk});
  EXPECT_EQ(check_pair("cache_control", edit(base, 0, R"({"role":"user","content":[{"type":"text","text":"do it","cache_control":{"type":"ephemeral"}}]})")),
            std::vector<std::string>{"cache_control: the candidate has 1 cache_control breakpoints, more than its input's 0"});
}

TEST(Violation, IsBuiltFromTheRuleAndTheMessageAndSaysWhere) {
  Violation v = Violation::of("keeps_first", "the first message\nwas replaced").at(0).with_ids({"toolu_1"});
  EXPECT_EQ(v.checker, "keeps_first");
  EXPECT_EQ(v.message_index, std::optional<std::size_t>(0));
  EXPECT_EQ(v.ids, std::vector<std::string>{"toolu_1"});
  EXPECT_EQ(v.to_string(), "keeps_first: messages.0: the first message\\nwas replaced");
  EXPECT_EQ(Violation::of("no_growth", "grew").to_string(), "no_growth: grew");
}

TEST(Violation, TheHostNamesStageAndPlugin) {
  StageRunReport report;
  report.stage = "micro";
  report.plugin_file = "/p/compactor_stage_micro.so";
  report.violations.push_back(Violation::of("pairing", "x").at(3));
  EXPECT_EQ(report.violation_lines(), std::vector<std::string>{"pairing: messages.3: x (stage micro, plugin /p/compactor_stage_micro.so)"});
}

}  // namespace
}  // namespace compactor
