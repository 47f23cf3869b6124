// The example's stage, checker and summarizer, tested with the test kit through the real host:
// every built-in checker runs on each candidate, params are validated as `compactor run`
// validates them, the archive is committed only when the candidate is, and a whole pipeline runs
// as the CLI runs it.
#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/testkit.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace {

using namespace compactor;
namespace tk = compactor::testkit;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const StageInfo& dedupe() { return tk::load_stage(STAGE_FILE, "dedupe_results"); }
const CheckerInfo& no_new_secrets() { return tk::load_checker(CHECKER_FILE, "no_new_secrets"); }
const SummarizerInfo& first_lines() { return tk::load_summarizer(SUMMARIZER_FILE, "first_lines"); }

// A session that read app.cfg (600 chars) twice, then ran the tests.
Conversation long_session() {
  std::string config(600, 'c');
  return tk::ConversationBuilder()
      .user("Rebuild, then tell me whether app.cfg changed.\nUse make.")
      .tool_call("toolu_1", "Read", {{"file_path", "app.cfg"}}, config)
      .tool_call("toolu_2", "Bash", {{"command", "make"}}, "built 3 targets")
      .tool_call("toolu_3", "Read", {{"file_path", "app.cfg"}}, config)
      .assistant("app.cfg is unchanged by the build.")
      .user("Good. Now run the tests.")
      .tool_call("toolu_4", "Bash", {{"command", "make test"}}, std::string(300, 't'))
      .assistant("All tests pass.")
      .user("Thanks.")
      .build();
}

// ---- the stage -------------------------------------------------------------------------------

TEST(DedupeResults, ReplacesTheOlderCopyAsTheGoldenFileSays) {
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"));
  ASSERT_EQ(run.status, tk::Status::committed) << run.reason;
  EXPECT_TRUE(tk::matches_golden(run.serialized(), GOLDEN_DIR "/expected.json"));
}

TEST(DedupeResults, ArchivesWhatItRemovesFirst) {
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"));
  ASSERT_EQ(run.status, tk::Status::committed) << run.reason;
  std::string archived = read_file(GOLDEN_DIR "/archived.txt");  // receipt, newline, bytes
  std::size_t newline = archived.find('\n');
  std::string receipt = archived.substr(0, newline);
  ASSERT_EQ(find_receipts(run.output[2].raw()), (std::vector<std::string>{receipt, receipt}));  // the marker and its instruction
  EXPECT_EQ(tk::restore(run.archive_dir, receipt), archived.substr(newline + 1));
}

TEST(DedupeResults, HasNothingToDoWhenNoResultRepeats) {
  Conversation c = tk::ConversationBuilder()
                       .user("Read both files.")
                       .tool_call("toolu_1", "Read", {{"file_path", "a"}}, std::string(300, 'a'))
                       .tool_call("toolu_2", "Read", {{"file_path", "b"}}, std::string(300, 'b'))
                       .assistant("Done.")
                       .build();
  tk::StageRun run = tk::run_stage_checked(dedupe(), c);
  EXPECT_EQ(run.status, tk::Status::unchanged);
  EXPECT_EQ(run.reason, "no older result repeats a newer one");
  EXPECT_EQ(run.serialized(), c.serialize());
}

TEST(DedupeResults, LeavesTheProtectedTailAlone) {
  tk::StageRunOptions options;
  options.recent_exchanges = 10;  // more than the golden input has: all but its first message is protected
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"), options);
  EXPECT_EQ(run.status, tk::Status::unchanged);
}

TEST(DedupeResults, KeepsTheRequestBodyFrame) {
  std::string same(300, 'x');
  Conversation c = tk::ConversationBuilder()
                       .system("You are a careful agent.")
                       .tool("Read", "reads a file")
                       .user("Read the file twice.")
                       .tool_call("toolu_1", "Read", {{"file_path", "a"}}, same)
                       .tool_call("toolu_2", "Read", {{"file_path", "a"}}, same)
                       .assistant("Same both times.")
                       .build();
  tk::StageRun run = tk::run_stage_checked(dedupe(), c);
  ASSERT_EQ(run.status, tk::Status::committed) << run.reason;
  EXPECT_NE(run.serialized().find("\"system\":\"You are a careful agent.\""), std::string::npos);
  EXPECT_NE(run.serialized().find("\"tools\":[{\"name\":\"Read\""), std::string::npos);
}

// Thinking blocks and turns of several blocks pass through untouched (thinking_unchanged and
// pairs_unchanged run on the candidate).
TEST(DedupeResults, LeavesThinkingAndMultiBlockTurnsAsTheyWere) {
  std::string same(300, 'y');
  Conversation c = tk::ConversationBuilder()
                       .user("Compare the two copies.")
                       .assistant_turn({tk::thinking("Both paths may hold the same file.", "c2lnbmF0dXJl"), tk::text("Reading both."),
                                        tk::tool_use("toolu_1", "Read", {{"file_path", "a"}}), tk::tool_use("toolu_2", "Read", {{"file_path", "b"}})})
                       .user_turn({tk::tool_result("toolu_1", boost::json::string(same)), tk::tool_result("toolu_2", boost::json::string(same)),
                                   tk::text("Also check the size.")})
                       .assistant_turn({tk::redacted_thinking("ZW5jcnlwdGVk"), tk::text("They are identical.")})
                       .user("Thanks.")
                       .build();
  tk::StageRunOptions options;
  options.recent_exchanges = 0;
  tk::StageRun run = tk::run_stage_checked(dedupe(), c, options);
  ASSERT_EQ(run.status, tk::Status::committed) << run.reason;
  EXPECT_EQ(run.output[1].raw(), c[1].raw());  // the thinking turn, byte for byte
  EXPECT_EQ(run.output[3].raw(), c[3].raw());
  EXPECT_NE(run.output[2].raw().find("[compactor dedupe: same as the result of toolu_2; archived as sha256:"), std::string::npos);
  EXPECT_NE(run.output[2].raw().find("Also check the size."), std::string::npos);
}

// A value the schema refuses is refused here as `compactor run` refuses it.
TEST(DedupeResults, ParamValuesAreValidatedAsTheHostDoes) {
  tk::StageRunOptions options;
  options.params.set("min_chars", std::int64_t{-1});
  try {
    tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"), options);
    FAIL() << "min_chars -1 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "stage dedupe_results: params.min_chars: expected an integer ≥ 0, got -1");
  }
  tk::StageRunOptions typo;
  typo.params.set("min_char", std::int64_t{10});
  EXPECT_THROW(tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"), typo), std::runtime_error);
}

// The one restore instruction names the deployment's way (`archive.restore_via`).
TEST(DedupeResults, TheRestoreInstructionIsTheDeployments) {
  tk::StageRunOptions options;
  options.restore_via = "mcp";
  tk::StageRun run = tk::run_stage_checked(dedupe(), long_session(), options);
  ASSERT_EQ(run.status, tk::Status::committed) << run.reason << (run.violations.empty() ? "" : run.violations[0].to_string());
  EXPECT_NE(run.output[2].raw().find("the `restore` tool of the `compactor` MCP server with the receipt sha256:"), std::string::npos)
      << run.output[2].raw();
  EXPECT_EQ(run.output[2].raw().find("compactor restore"), std::string::npos);
}

// ---- a text edit, by a stage of the test's own -------------------------------------------------

// Shortens the first assistant answer (a text block) after archiving the whole message, naming
// the receipt: what the `archived` checker requires of a changed text block.
class ShortensTheFirstAnswer final : public Stage {
 public:
  StageResult run(const Conversation& c, const StageContext& context) override {
    auto receipt = context.archive.put(c[1].raw());
    if (!receipt) return StageResult::decline(receipt.error().message);
    auto edited = with_texts(c[1], {{0, "[shortened; archived as " + *receipt + "]"}});
    if (!edited) return StageResult::decline(edited.error().message);
    std::vector<MessagePtr> messages = c.messages();
    messages[1] = std::move(edited).value();
    return StageResult::candidate(std::move(messages));
  }
};

TEST(TextEdit, AnArchivedTextEditIsCommitted) {
  Conversation c = tk::ConversationBuilder()
                       .user("Explain the build.")
                       .assistant(std::string(400, 'e'))
                       .user("Shorter, please.")
                       .assistant("It compiles three targets.")
                       .build();
  StageInfo info;
  info.name = "shortens_the_first_answer";
  info.create = factory_of<ShortensTheFirstAnswer>();
  tk::StageRunOptions options;
  options.recent_exchanges = 1;
  tk::StageRun run = tk::run_stage_checked(info, c, options);
  ASSERT_EQ(run.status, tk::Status::committed) << run.reason;
  std::vector<std::string> receipts = find_receipts(run.output[1].raw());
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(tk::restore(run.archive_dir, receipts[0]), c[1].raw());
}

// ---- the checker -----------------------------------------------------------------------------

// A stage that leaks a key into a tool result (archiving what it replaces, so that only the
// team's own rule objects).
class LeakyStage final : public Stage {
 public:
  StageResult run(const Conversation& c, const StageContext& context) override {
    std::vector<MessagePtr> messages = c.messages();
    std::string receipt = context.archive.put(std::string(raw_block_field(c[4], 0, "content"))).value();
    messages[4] = with_result_contents(c[4], {{0, boost::json::string("built; key xoxb-1234; archived as " + receipt)}}).value();
    return StageResult::candidate(std::move(messages));
  }
};

StageInfo leaky() {
  StageInfo info;
  info.name = "leaky";
  info.may_grow = true;
  info.create = factory_of<LeakyStage>();
  return info;
}

TEST(NoNewSecrets, RejectsACandidateThatAddsAKeyLikeABuiltInChecker) {
  StageInfo stage = leaky();
  tk::StageRunOptions options;
  ParamValues slack_keys;
  slack_keys.set("prefixes", std::string("xoxb-"));
  options.extra_checkers = {{&no_new_secrets(), slack_keys}};
  Conversation input = tk::read_conversation_file(GOLDEN_DIR "/input.json");
  tk::StageRun run = tk::run_stage_checked(stage, input, options);
  EXPECT_EQ(run.status, tk::Status::rejected);
  ASSERT_EQ(run.violations.size(), 1u);  // only the team's rule
  EXPECT_EQ(run.violations[0].checker, "no_new_secrets");
  EXPECT_EQ(run.violations[0].what, "the candidate holds 1 API-key-looking tokens, the conversation it came from 0");
  EXPECT_EQ(run.serialized(), input.serialize());  // rejected: the conversation stays as it was
}

TEST(NoNewSecrets, ItsPrefixesAreItsParam) {
  StageInfo stage = leaky();
  tk::StageRunOptions options;
  options.extra_checkers = {{&no_new_secrets(), {}}};  // the default prefixes know no xoxb- key
  EXPECT_EQ(tk::run_stage_checked(stage, tk::read_conversation_file(GOLDEN_DIR "/input.json"), options).status, tk::Status::committed);
  ParamValues wrong;
  wrong.set("prefixes", std::int64_t{1});
  options.extra_checkers = {{&no_new_secrets(), wrong}};
  EXPECT_THROW(tk::run_stage_checked(stage, tk::read_conversation_file(GOLDEN_DIR "/input.json"), options), std::runtime_error);
}

TEST(NoNewSecrets, LetsTheDedupePass) {
  tk::StageRunOptions options;
  options.extra_checkers = {{&no_new_secrets(), {}}};
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"), options);
  EXPECT_EQ(run.status, tk::Status::committed) << run.reason;
}

// ---- the summarizer, alone and in a whole pipeline ----------------------------------------------

TEST(FirstLines, SummarizesTheUsersFirstLines) {
  tk::SummarizeOptions options;
  options.params.set("max_lines", std::int64_t{2});
  auto summary = tk::summarize(first_lines(), long_session(), options);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->text, "The user wrote: Rebuild, then tell me whether app.cfg changed.\nThe user wrote: Good. Now run the tests.");
  options.params.set("max_lines", std::int64_t{0});
  EXPECT_THROW(tk::summarize(first_lines(), long_session(), options), std::runtime_error);  // at_least(1)
}

TEST(Pipeline, DedupeThenASummaryByTheTeamsBackend) {
  tk::PipelineRun run = tk::run_pipeline(PIPELINE_FILE, long_session());
  EXPECT_EQ(run.status, tk::RunStatus::ok) << run.error;
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.stage("dedupe_results").status, tk::Status::committed) << run.stage("dedupe_results").reason;
  EXPECT_EQ(run.stage("summarize").status, tk::Status::committed) << run.stage("summarize").reason;
  std::string first = run.output[0].text();
  EXPECT_EQ(first.rfind("[compactor summary]", 0), 0u) << first;
  EXPECT_NE(first.find("<<<summary\nThe user wrote: Rebuild, then tell me whether app.cfg changed.\nsummary>>>"), std::string::npos) << first;
}

// The package brings the host's meters (COMPACTOR_METER_DIR holds their rank files), and a test
// counts with them: "hello world" is two o200k tokens.
TEST(Meters, ATestCountsWithThePackagesMeters) {
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(METER_DIR) / "o200k_base.tiktoken")) << METER_DIR;
  const Conversation c = tk::ConversationBuilder().user("hello world").build();
  EXPECT_EQ(tk::metered(c, tk::meter("o200k")).size_in(SizeUnit::tokens), 2u);
}

}  // namespace
