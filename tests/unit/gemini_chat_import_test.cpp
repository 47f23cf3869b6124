// Importing the chats Gemini CLI saves: a chat recorded offline from Gemini CLI 0.61
// (tests/data/gemini-cli/session-recorded.jsonl, made by tests/clients/gemini-cli/record_chat.js,
// whose task fixes what the chat must hold: 8 reads one per step, then 2 in one step, then an
// answer; files of numbered "file N line L" lines) and a hand-made chat in the older one-object
// layout. The expected shapes come from those tasks, not from the importer.
#include "support/test_support.hpp"

#include "loader/builtin_checkers.hpp"
#include "import/importers.hpp"
#include "wire/input_document.hpp"
#include "model/active_request.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

ImportResult import_or_die(const std::string& name) {
  auto r = wire::import_session(test::data_path(name), std::nullopt);
  if (!r) throw std::runtime_error(r.error().message);
  return std::move(r->result);
}

std::vector<Violation> check(const Conversation& c) {
  return run_checkers(make_input_checkers(), CheckInput{c, c, compute_protected_tail(c, 0), find_active_request(c).texts});
}

TEST(GeminiChatImport, TheRecordedChatIsTheTasksStepsEachCallAnsweredOnce) {
  auto r = import_or_die("gemini-cli/session-recorded.jsonl");
  EXPECT_EQ(r.report.format, "gemini-cli");
  EXPECT_TRUE(r.report.broken_lines.empty());
  EXPECT_TRUE(r.report.repairs.empty());
  ASSERT_TRUE(r.conversation.has_value());
  const Conversation& c = *r.conversation;
  EXPECT_TRUE(check(c).empty());
  // The session context and the prompt (one user turn), 9 steps of a call turn and its results,
  // the answer.
  ASSERT_EQ(c.size(), 1u + 2u * 9u + 1u);
  EXPECT_EQ(r.report.tool_uses, 10u);
  EXPECT_EQ(r.report.tool_uses_in_log, 10u);
  EXPECT_NE(c[0].text().find("Read the 10 files"), std::string::npos);
  std::size_t file = 0;
  for (std::size_t i = 1; i + 1 < c.size(); i += 2) {
    ASSERT_EQ(c[i].role(), Role::assistant);
    std::vector<std::string> calls;
    for (const Block& b : c[i].blocks())
      if (b.kind() == BlockKind::tool_use) calls.emplace_back(b.id());
    EXPECT_EQ(calls.size(), i == 17 ? 2u : 1u) << i;  // the 9th step reads two files at once
    const auto& results = c[i + 1].blocks();
    ASSERT_EQ(results.size(), calls.size()) << i;  // read once, though 0.61 writes each result twice
    for (std::size_t k = 0; k < calls.size(); ++k) {
      EXPECT_EQ(results[k].tool_use_id(), calls[k]);
      ++file;
      const std::string want = "file " + std::to_string(file) + " line 0: lorem ipsum dolor sit amet";
      ASSERT_TRUE(results[k].content()->is_string());
      EXPECT_EQ(std::string(results[k].content()->get_string()).rfind(want, 0), 0u) << i << " " << k;
    }
  }
  EXPECT_EQ(c[c.size() - 1].text(), "All 10 files read: each holds numbered lorem ipsum lines.");
  // The model's thoughts are never sent back: none is in the history.
  for (const MessagePtr& m : c.messages()) EXPECT_EQ(m->raw().find("Thinking about the next step."), std::string::npos);
  // One recorded call per model turn, with its model and tokens.
  ASSERT_EQ(r.recorded_calls.size(), 10u);
  for (const auto& call : r.recorded_calls) {
    EXPECT_EQ(call.model, "gemini-3.8-flash");
    EXPECT_GT(call.prompt_tokens, 0u);
    EXPECT_EQ(call.output_tokens, 20u);  // the scripted upstream reports 20 for every answer
  }
  EXPECT_EQ(r.session_id.size(), 36u);
}

TEST(GeminiChatImport, TheOlderOneObjectLayoutImportsWithImagesErrorsAndNoThoughts) {
  auto r = import_or_die("gemini-cli/session-legacy-handmade.json");
  EXPECT_EQ(r.report.format, "gemini-cli");
  ASSERT_TRUE(r.conversation.has_value());
  const Conversation& c = *r.conversation;
  EXPECT_TRUE(check(c).empty());
  ASSERT_EQ(c.size(), 4u);  // the info record is for the person, never the model
  EXPECT_EQ(r.report.other_skipped, 1u);
  ASSERT_EQ(c[2].blocks().size(), 3u);
  EXPECT_EQ(c[2].blocks()[0].tool_use_id(), "read_file-1");
  EXPECT_EQ(c[2].blocks()[1].tool_use_id(), "read_file-2");
  EXPECT_TRUE(c[2].blocks()[1].is_error());  // {"error": …} is the response of a call that failed
  EXPECT_EQ(c[2].blocks()[1].content()->get_string(), "File not found: /p/notes.md");
  EXPECT_EQ(c[2].blocks()[2].kind(), BlockKind::image);
  EXPECT_EQ(c[1].raw().find("Read the image, then the notes."), std::string::npos);
  ASSERT_EQ(r.recorded_calls.size(), 2u);
  EXPECT_EQ(r.recorded_calls[1].model, "gemini-2.5-pro");
  EXPECT_EQ(r.recorded_calls[1].prompt_tokens, 1500u);
  EXPECT_EQ(r.recorded_calls[1].output_tokens, 25u);
}

TEST(GeminiChatImport, ChatsAreDetectedAndCheckReadsThem) {
  for (const char* name : {"gemini-cli/session-recorded.jsonl", "gemini-cli/session-legacy-handmade.json"}) {
    EXPECT_EQ(wire::detect_input_form(test::read_file(test::data_path(name)), name, wire::FormUse::sessions).name(), "gemini-cli") << name;
    auto r = test::run_cli({"check", "--input", test::data_path(name)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("(gemini-cli)"), std::string::npos) << r.err;
  }
  auto forced = test::run_cli({"count", "--input", test::data_path("gemini-cli/session-recorded.jsonl"), "--input-format", "gemini-cli"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
}

}  // namespace
}  // namespace compactor
