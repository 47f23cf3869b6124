// The example stage and checker, tested with the test kit through the real host: every built-in
// checker runs on each candidate, and the archive is committed only when the candidate is.
#include "compactor/archive.hpp"
#include "compactor/message_edit.hpp"
#include "compactor/testkit.hpp"

#include <fstream>
#include <sstream>

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

TEST(DedupeResults, ReplacesTheOlderCopyAsTheGoldenFileSays) {
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"));
  ASSERT_EQ(run.status, "committed") << run.reason;
  EXPECT_TRUE(tk::matches_golden(run.serialized(), GOLDEN_DIR "/expected.json"));
}

TEST(DedupeResults, ArchivesWhatItRemovesFirst) {
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"));
  ASSERT_EQ(run.status, "committed") << run.reason;
  std::string archived = read_file(GOLDEN_DIR "/archived.txt");  // receipt, newline, bytes
  std::size_t newline = archived.find('\n');
  std::string receipt = archived.substr(0, newline);
  ASSERT_EQ(find_receipts(run.output[2].raw()), std::vector<std::string>{receipt});
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
  EXPECT_EQ(run.status, "unchanged");
  EXPECT_EQ(run.reason, "no older result repeats a newer one");
  EXPECT_EQ(run.serialized(), c.serialize());
}

TEST(DedupeResults, LeavesTheProtectedTailAlone) {
  tk::StageRunOptions options;
  options.recent_exchanges = 10;  // more than the golden input has: all but its first message is protected
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"), options);
  EXPECT_EQ(run.status, "unchanged");
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
  ASSERT_EQ(run.status, "committed") << run.reason;
  EXPECT_NE(run.serialized().find("\"system\":\"You are a careful agent.\""), std::string::npos);
  EXPECT_NE(run.serialized().find("\"tools\":[{\"name\":\"Read\""), std::string::npos);
}

// A stage that leaks a key into a tool result (archiving what it replaces, so that only the
// team's own rule objects).
class LeakyStage final : public Stage {
 public:
  StageResult run(const Conversation& c, const StageContext& context) override {
    std::vector<MessagePtr> messages = c.messages();
    std::string receipt = context.archive.put(std::string(raw_block_field(c[4], 0, "content"))).value();
    messages[4] = with_result_contents(c[4], {{0, boost::json::string("built; key sk-ant-api03-XXXX; archived as " + receipt)}}).value();
    return StageResult::candidate(std::move(messages));
  }
};

TEST(NoNewSecrets, RejectsACandidateThatAddsAKeyLikeABuiltInChecker) {
  StageInfo leaky;
  leaky.name = "leaky";
  leaky.may_grow = true;
  leaky.create = factory_of<LeakyStage>();
  tk::StageRunOptions options;
  options.extra_checkers = {&tk::load_checker(CHECKER_FILE, "no_new_secrets")};
  Conversation input = tk::read_conversation_file(GOLDEN_DIR "/input.json");
  tk::StageRun run = tk::run_stage_checked(leaky, input, options);
  EXPECT_EQ(run.status, "rejected");
  ASSERT_EQ(run.violations.size(), 1u) << run.violations[0] << "\n" << run.violations[1];  // only the team's rule
  EXPECT_EQ(run.violations[0].rfind("no_new_secrets: the candidate holds 1 API-key-looking tokens, the conversation it came from 0", 0), 0u)
      << run.violations[0];
  EXPECT_EQ(run.serialized(), input.serialize());  // rejected: the conversation stays as it was
}

TEST(NoNewSecrets, LetsTheDedupePass) {
  tk::StageRunOptions options;
  options.extra_checkers = {&tk::load_checker(CHECKER_FILE, "no_new_secrets")};
  tk::StageRun run = tk::run_stage_checked(dedupe(), tk::read_conversation_file(GOLDEN_DIR "/input.json"), options);
  EXPECT_EQ(run.status, "committed") << run.reason;
}

}  // namespace
