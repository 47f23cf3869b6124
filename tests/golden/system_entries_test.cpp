// Claude Code's `role: "system"` entries inside `messages`. The host keeps them out of
// what stages see and places them back after every stage; these tests hold it to the API's
// rules end to end: `compactor run` with stages that drop and summarize the messages around the
// entries writes every entry verbatim, in order, at a place the API accepts (and `compactor
// check` passes the output), and a stage whose candidate leaves an entry no valid place is
// rejected, not allowed to lose it. The entries' bytes and the rules are the fixture's and the
// API's, never the code's.
#include "support/test_support.hpp"

#include "compactor/testkit.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

const std::vector<std::string> kEntries = {
    R"({"role":"system","content":"Available agent types: general-purpose, Explore."})",
    R"({"role":"system","content":"The user switched to plan mode."})",
    R"({"role":"system","content":[{"type":"text","text":"Reminder: keep answers short.","cache_control":{"type":"ephemeral"}}]})",
    R"({"role":"system","content":"Token budget: 500 left."})",
};

// A Claude-Code-shaped request: the first prompt, 24 tool exchanges with large results, an
// answer and a last prompt. Entries after the first prompt, after the results of exchanges 6 and
// 14 (the middle, which snip cuts and summarize replaces) and at the very end.
std::string request_body() {
  std::string m = "[";
  auto add = [&](const std::string& s) { m += (m.size() > 1 ? "," : "") + s; };
  add(R"({"role":"user","content":"set up the project and run the tests"})");
  add(kEntries[0]);
  for (int i = 0; i < 24; ++i) {
    std::string id = "toolu_" + std::to_string(100 + i);
    add(R"({"role":"assistant","content":[{"type":"text","text":"step )" + std::to_string(i) +
        R"("},{"type":"tool_use","id":")" + id + R"(","name":"Bash","input":{"command":"make step)" + std::to_string(i) + R"("}}]})");
    add(R"({"role":"user","content":[{"type":"tool_result","tool_use_id":")" + id + R"(","content":")" +
        std::string(1500, static_cast<char>('a' + i % 26)) + R"("}]})");
    if (i == 6) add(kEntries[1]);
    if (i == 14) add(kEntries[2]);
  }
  add(R"({"role":"assistant","content":"All 24 steps ran."})");
  add(R"({"role":"user","content":"thanks; now write the summary of what failed"})");
  add(kEntries[3]);
  return R"({"model":"claude-opus-4-8","max_tokens":1024,"system":"You are Claude Code.","messages":)" + m + "]}";
}

struct Ran {
  int exit_code;
  std::string err, output, report;
  std::string checked;  // what `compactor check` printed for the output
};

Ran run(const std::string& name, const std::string& yaml) {
  test::ScratchFolder scratch("sysentries-" + name);
  const fs::path& dir = scratch.path();
  std::ofstream(dir / "in.json") << request_body();
  std::ofstream(dir / "p.yaml") << yaml;
  ::setenv("COMPACTOR_PLUGIN_PATH", COMPACTOR_TEST_PLUGIN_DIR, 1);
  auto r = test::run_cli({"run", "--config", "p.yaml", "--input", "in.json", "--output", "out.json", "--report", "r.json"}, "",
                         dir.string());
  ::unsetenv("COMPACTOR_PLUGIN_PATH");
  Ran out{r.exit_code, r.err, test::read_file((dir / "out.json").string()), test::read_file((dir / "r.json").string()), ""};
  if (!out.output.empty()) {
    auto checked = test::run_cli({"check", "--input", "out.json"}, "", dir.string());
    EXPECT_EQ(checked.exit_code, 0) << name << ": the output fails `compactor check`: " << checked.err;
    out.checked = checked.out;
  }
  return out;
}

// Every entry verbatim, in order; each right after a user message and last or before an
// assistant message; no two together. Returns the number of messages besides the entries.
std::size_t expect_entries_kept(const std::string& output) {
  std::size_t from = 0;
  for (const std::string& e : kEntries) {
    std::size_t at = output.find(e, from);
    EXPECT_NE(at, std::string::npos) << "entry missing, changed or out of order: " << e;
    if (at != std::string::npos) from = at + e.size();
  }
  const json::value doc = json::parse(output);
  const json::array& messages = doc.as_object().at("messages").as_array();
  std::size_t others = 0;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].at("role") != "system") {
      ++others;
      continue;
    }
    EXPECT_GT(i, 0u);
    if (i == 0) continue;
    EXPECT_EQ(messages[i - 1].at("role"), "user") << "entry at messages." << i;
    if (i + 1 < messages.size()) {
      EXPECT_EQ(messages[i + 1].at("role"), "assistant") << "entry at messages." << i;
    }
  }
  return others;
}

TEST(SystemEntries, SnipCutsTheMessagesAroundTwoEntriesAndKeepsThemInPlace) {
  Ran r = run("snip", "version: 1\nbudget: {unit: chars, limit: 20000}\narchive: {dir: archive}\n"
                      "pipeline:\n  - stage: snip\n    params: {max_messages: 12, keep_head: 1}\n");
  ASSERT_LE(r.exit_code, 1) << r.err;
  EXPECT_NE(r.report.find("\"status\": \"committed\""), std::string::npos) << r.report;
  EXPECT_LT(expect_entries_kept(r.output), 20u);  // 51 messages in: the head, snip's marker and the newest
}

TEST(SystemEntries, SummarizeReplacesTheMessagesAroundTwoEntriesAndKeepsThem) {
  Ran r = run("summarize", "version: 1\nbudget: {unit: chars, limit: 20000}\nrecent: {exchanges: 3}\narchive: {dir: archive}\n"
                           "summarizer: {kind: test_fixed}\npipeline:\n  - stage: summarize\n    when: over_budget\n");
  ASSERT_LE(r.exit_code, 1) << r.err;
  EXPECT_NE(r.report.find("\"stage\": \"summarize\""), std::string::npos);
  EXPECT_NE(r.report.find("\"status\": \"committed\""), std::string::npos) << r.report;
  EXPECT_LT(expect_entries_kept(r.output), 51u);
}

// The text blocks of the output's system entries, in order, and how many entries hold them.
std::pair<json::array, std::size_t> system_blocks(const std::string& output) {
  json::array blocks;
  std::size_t entries = 0;
  const json::value doc = json::parse(output);
  for (const json::value& m : doc.at("messages").as_array()) {
    if (m.at("role") != "system") continue;
    ++entries;
    const json::value& content = m.at("content");
    if (content.is_string()) {
      blocks.push_back(json::object{{"type", "text"}, {"text", content}});
    } else {
      for (const json::value& b : content.as_array()) blocks.push_back(b);
    }
  }
  return {blocks, entries};
}

// With one exchange protected, summarize keeps too few turns for four entries (two entries need
// an assistant turn between them, the API refuses them side by side): the entries that share a
// place are written as one entry holding their text blocks in order, so the summary commits and
// nothing is lost. The blocks are the fixture's, written out by hand.
TEST(SystemEntries, ASummaryLeavingTooFewPlacesJoinsTheEntriesThatShareOne) {
  Ran r = run("summarize-tight", "version: 1\nbudget: {unit: chars, limit: 20000}\nrecent: {exchanges: 1}\narchive: {dir: archive}\n"
                                 "summarizer: {kind: test_fixed}\npipeline:\n  - stage: summarize\n    when: over_budget\n");
  EXPECT_LE(r.exit_code, 1) << r.err;
  EXPECT_NE(r.report.find("\"status\": \"committed\""), std::string::npos) << r.report;
  auto [blocks, entries] = system_blocks(r.output);
  EXPECT_EQ(blocks, json::parse(R"([{"type":"text","text":"Available agent types: general-purpose, Explore."},
                                    {"type":"text","text":"The user switched to plan mode."},
                                    {"type":"text","text":"Reminder: keep answers short.","cache_control":{"type":"ephemeral"}},
                                    {"type":"text","text":"Token budget: 500 left."}])"));
  EXPECT_LT(entries, 4u) << r.output;  // some were joined
  // The run's sizes are those of what it wrote (a joined entry counted as written), as `check`
  // counts them in the output file.
  const json::value report = json::parse(r.report);
  EXPECT_NE(r.checked.find(", " + std::to_string(report.at("output_size").at("chars").as_int64()) + " chars, " +
                           std::to_string(report.at("output_size").at("bytes").as_int64()) + " bytes"),
            std::string::npos)
      << r.checked << "\n" << r.report;
  // Each entry right after a user message, last or before an assistant message.
  const json::value doc = json::parse(r.output);
  const json::array& messages = doc.at("messages").as_array();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].at("role") != "system") continue;
    ASSERT_GT(i, 0u);
    EXPECT_EQ(messages[i - 1].at("role"), "user") << "entry at messages." << i;
    if (i + 1 < messages.size()) {
      EXPECT_EQ(messages[i + 1].at("role"), "assistant") << "entry at messages." << i;
    }
  }
}

// A stage that drops the user message an entry followed and the one after: nothing it keeps
// leaves a place the API accepts (an assistant message ends the history), so its candidate is
// rejected and the entry stays where it was.
class DropsTheEntrysNeighbours final : public Stage {
 public:
  StageResult run(const Conversation& committed, const StageContext& context) override {
    std::vector<MessagePtr> kept = {committed.messages()[0], committed.messages()[1], committed.messages()[3]};
    std::string dropped = std::string(committed[2].raw()) + "\n";
    auto receipt = context.archive.put(dropped);
    if (!receipt) return StageResult::decline(receipt.error().message);
    return StageResult::candidate(std::move(kept));
  }
};

TEST(SystemEntries, AStageLeavingAnEntryNoValidPlaceIsRejected) {
  Conversation input = testkit::read_conversation(
      R"([{"role":"user","content":"start"},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"},)"
      R"({"role":"system","content":"Plan mode."},{"role":"assistant","content":"Going on"}])");
  ASSERT_EQ(input.size(), 4u);
  StageInfo info;
  info.name = "drops_the_entrys_neighbours";
  info.create = factory_of<DropsTheEntrysNeighbours>();
  testkit::StageRunOptions options;
  options.recent_exchanges = 0;
  options.checkers = {"order"};  // `structure` left out: the host still refuses a lost entry
  testkit::StageRun run = testkit::run_stage_checked(info, input, options);
  EXPECT_EQ(run.status, testkit::Status::rejected);
  ASSERT_EQ(run.violations.size(), 1u);
  EXPECT_EQ(run.violations[0].to_string().rfind("structure: system entry 1 of 1 has no valid place left (rule: a system entry follows a user "
                                    "message and is the last entry or is followed by an assistant message); it would be lost",
                                    0),
            0u)
      << run.violations[0].to_string();
  EXPECT_EQ(run.serialized(), R"([{"role":"user","content":"start"},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"},)"
                              R"({"role":"system","content":"Plan mode."},{"role":"assistant","content":"Going on"}])");
}

}  // namespace
}  // namespace compactor
