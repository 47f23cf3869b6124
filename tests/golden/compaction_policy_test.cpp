// The compaction policy for long sessions, end to end through `compactor run`:
// hysteresis (compact once the limit is crossed, down to the target, in one step), rolling
// summaries that keep the newest exchanges that fit, and a snip with nothing safe to do declining
// without stopping the run. Expected sizes come from the configs' numbers, not from the code.
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// A user request, then one exchange per result (a Read of `<prefix><i>.txt`), then a closing
// assistant text and a short user answer.
json::array session(const std::vector<std::size_t>& result_sizes, const std::string& prefix = "src/file") {
  json::array m{json::object{{"role", "user"}, {"content", "refactor every module of the parser and keep the tests green"}}};
  for (std::size_t i = 0; i < result_sizes.size(); ++i) {
    std::string id = "toolu_" + prefix.substr(prefix.size() - 1) + std::to_string(i);
    m.push_back(json::object{{"role", "assistant"},
                             {"content", json::array{json::object{{"type", "tool_use"}, {"id", id}, {"name", "Read"},
                                                                  {"input", json::object{{"file_path", prefix + std::to_string(i) + ".txt"}}}}}}});
    m.push_back(json::object{{"role", "user"},
                             {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id},
                                                                  {"content", std::string(result_sizes[i], static_cast<char>('a' + i % 26))}}}}});
  }
  m.push_back(json::object{{"role", "assistant"}, {"content", "Done. Shall I go on?"}});
  m.push_back(json::object{{"role", "user"}, {"content", "yes"}});
  return m;
}

struct RunResult {
  test::CommandResult result;
  json::object report;
  json::array output;
};

RunResult run_in(const fs::path& dir, const std::string& config, const json::array& input) {
  fs::create_directories(dir);
  std::ofstream(dir / "c.yaml") << config;
  std::ofstream(dir / "in.json") << json::serialize(input);
  fs::remove(dir / "out.json");
  fs::remove(dir / "report.json");
  RunResult r;
  r.result = test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json", "--report", "report.json"}, "",
                           dir.string());
  if (fs::exists(dir / "report.json")) r.report = json::parse(test::read_file((dir / "report.json").string())).as_object();
  if (fs::exists(dir / "out.json")) r.output = json::parse(test::read_file((dir / "out.json").string())).as_array();
  return r;
}

std::string status_of(const RunResult& r, std::size_t stage) {
  return std::string(r.report.at("stages").as_array().at(stage).as_object().at("status").as_string());
}
std::uint64_t chars_out(const RunResult& r) { return r.report.at("output_size").as_object().at("chars").to_number<std::uint64_t>(); }
std::string first_text(const json::array& messages) {
  const json::value& content = messages.at(0).as_object().at("content");
  if (content.is_string()) return std::string(content.as_string());
  return std::string(content.as_array().at(0).as_object().at("text").as_string());
}

class CompactionPolicy : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("compactor-policy-" + std::to_string(::getpid()));
  void TearDown() override { fs::remove_all(dir_); }
};

constexpr const char* kPolicy =
    "version: 1\nbudget: {unit: chars, limit: 20000, target: 12000}\nrecent: {exchanges: 1}\narchive: {dir: archive}\n"
    "pipeline:\n"
    "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 120, until: target}\n"
    "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 1000, keep_fraction: 0.5, min_growth: 1000}\n";

TEST_F(CompactionPolicy, UnderTheLimitNothingRunsEvenAboveTheTarget) {
  // ~15,000 chars: over the 12,000 target, under the 20,000 limit.
  RunResult r = run_in(dir_, kPolicy, session({3000, 3000, 3000, 3000, 2000}));
  EXPECT_EQ(r.result.exit_code, 0) << r.result.out << r.result.err;
  EXPECT_EQ(status_of(r, 0), "skipped");
  EXPECT_EQ(status_of(r, 1), "skipped");
  EXPECT_TRUE(r.report.at("first_changed_message").is_null());
}

TEST_F(CompactionPolicy, OverTheLimitItCompactsDownToTheTargetInOneStep) {
  // 24 results of 1,200 chars (~34,000 chars): each marker (~130 chars: it names the tool and the
  // path) saves ~1,070, so micro alone reaches the target, and stops as soon as it is met.
  RunResult r = run_in(dir_, kPolicy, session(std::vector<std::size_t>(24, 1200)));
  EXPECT_EQ(r.result.exit_code, 0) << r.result.out << r.result.err;
  EXPECT_EQ(status_of(r, 0), "committed");
  EXPECT_LE(chars_out(r), 12000u);
  EXPECT_GT(chars_out(r), 12000u - 1000u) << "it stops at the target, not below it";
  // Newest first: the oldest results are still whole, the newest eligible ones are markers.
  std::string out = json::serialize(r.output);
  EXPECT_NE(out.find(std::string(1200, 'a')), std::string::npos) << "the oldest result stays";
  EXPECT_EQ(out.find(std::string(1200, 'w')), std::string::npos) << "result 22 (newest eligible) is masked";
  // The next call appends one exchange: under the limit, nothing changes (the prefix holds).
  json::array next = r.output;
  next.pop_back();
  next.pop_back();
  for (auto& m : session({1200}, "src/next")) next.push_back(m);
  next.erase(next.begin() + static_cast<std::ptrdiff_t>(r.output.size() - 2));  // the new session's own first prompt
  RunResult again = run_in(dir_, kPolicy, next);
  EXPECT_EQ(again.result.exit_code, 0) << again.result.out << again.result.err;
  EXPECT_TRUE(again.report.at("first_changed_message").is_null()) << again.result.out;
}

TEST_F(CompactionPolicy, RollingSummaryKeepsTheNewestThatFitAndFoldsThePreviousOne) {
  // Results under micro's floor: only a summary can help.
  RunResult first = run_in(dir_, kPolicy, session(std::vector<std::size_t>(80, 110), "src/a"));
  ASSERT_EQ(first.result.exit_code, 0) << first.result.out << first.result.err;
  EXPECT_EQ(status_of(first, 1), "committed");
  EXPECT_LE(chars_out(first), 12000u);
  std::string summary = first_text(first.output);
  EXPECT_TRUE(summary.starts_with("[compactor summary]")) << summary;
  EXPECT_NE(summary.find("compactor-summaries: 1;"), std::string::npos);
  // The substantive request and the short answer are both quoted verbatim.
  EXPECT_NE(summary.find("refactor every module of the parser and keep the tests green\n\nThe user's newest message (quoted "
                         "verbatim):\nyes\n"),
            std::string::npos)
      << summary;
  // More than the protected tail stays verbatim: the exchanges that fit half the target (6,000 chars).
  std::size_t kept_exchanges = 0;
  for (const auto& m : first.output) kept_exchanges += m.as_object().at("role") == "assistant" && m.as_object().at("content").is_array();
  EXPECT_GE(kept_exchanges, 15u);          // an exchange here is 330-340 chars
  EXPECT_LE(kept_exchanges, 6000u / 300u);

  // The session goes on: 80 more exchanges with other paths. The next summary folds the first.
  json::array grown = first.output;
  grown.pop_back();
  grown.pop_back();
  json::array more = session(std::vector<std::size_t>(80, 110), "lib/b");
  for (std::size_t i = 1; i < more.size(); ++i) grown.push_back(more[i]);
  RunResult second = run_in(dir_, kPolicy, grown);
  ASSERT_EQ(second.result.exit_code, 0) << second.result.out << second.result.err;
  EXPECT_EQ(status_of(second, 1), "committed");
  std::size_t summaries = 0;
  for (const auto& m : second.output) summaries += json::serialize(m).find("[compactor summary]") != std::string::npos;
  EXPECT_EQ(summaries, 1u) << "one summary message, however long the session";
  std::string rolled = first_text(second.output);
  EXPECT_NE(rolled.find("compactor-summaries: 2;"), std::string::npos);
  EXPECT_NE(rolled.find("lib/b"), std::string::npos) << rolled;
  // The first summary's snapshot is reachable from the second's: the chain restores.
  std::size_t at = rolled.find("restore it with `compactor restore ");
  ASSERT_NE(at, std::string::npos);
  std::string receipt = rolled.substr(at + std::string("restore it with `compactor restore ").size(), 71);
  auto restored = test::run_cli({"restore", receipt, "--archive", "archive"}, "", dir_.string());
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("compactor-summaries: 1;"), std::string::npos) << "the first summary was archived with the history";
}

// The same session with `append: true, max_segments: 2`: the second summary goes after the first,
// which stays byte for byte (the prompt cache keeps it); the third, with two segments already,
// rolls both up into one.
TEST_F(CompactionPolicy, AppendedSummariesLeaveThePreviousOneAndRollUpAtMaxSegments) {
  std::string policy = kPolicy;
  policy.replace(policy.find("min_growth: 1000}"), 17, "min_growth: 1000, append: true, max_segments: 2}");
  auto grow = [](json::array history, const std::string& prefix) {
    history.pop_back();
    history.pop_back();
    json::array more = session(std::vector<std::size_t>(80, 110), prefix);
    for (std::size_t i = 1; i < more.size(); ++i) history.push_back(more[i]);
    return history;
  };
  auto summaries_in = [](const json::array& messages) {
    std::size_t n = 0;
    for (const auto& m : messages) n += json::serialize(m).find("[compactor summary]") != std::string::npos;
    return n;
  };
  RunResult first = run_in(dir_, policy, session(std::vector<std::size_t>(80, 110), "src/a"));
  ASSERT_EQ(first.result.exit_code, 0) << first.result.out << first.result.err;
  ASSERT_EQ(summaries_in(first.output), 1u);

  RunResult second = run_in(dir_, policy, grow(first.output, "lib/b"));
  ASSERT_EQ(second.result.exit_code, 0) << second.result.out << second.result.err;
  EXPECT_EQ(status_of(second, 1), "committed");
  EXPECT_LE(chars_out(second), 12000u);
  ASSERT_EQ(summaries_in(second.output), 2u);
  EXPECT_EQ(json::serialize(second.output.at(0)), json::serialize(first.output.at(0))) << "the first summary is left as it was";
  const std::string appended = json::serialize(second.output.at(1));
  EXPECT_NE(appended.find("compactor-summaries: 2;"), std::string::npos) << appended;
  EXPECT_NE(appended.find("lib/b"), std::string::npos);
  EXPECT_EQ(appended.find("src/a"), std::string::npos) << "it summarizes only what came after the first";
  EXPECT_NE(appended.find("refactor every module of the parser and keep the tests green"), std::string::npos);  // the request, verbatim

  RunResult third = run_in(dir_, policy, grow(second.output, "doc/c"));
  ASSERT_EQ(third.result.exit_code, 0) << third.result.out << third.result.err;
  EXPECT_EQ(status_of(third, 1), "committed");
  ASSERT_EQ(summaries_in(third.output), 1u) << "two segments: the next summary rolls them up";
  const std::string rolled = first_text(third.output);
  EXPECT_NE(rolled.find("compactor-summaries: 3;"), std::string::npos);
  EXPECT_NE(rolled.find("doc/c"), std::string::npos);  // the newest paths (1,000 chars hold no more)
  // Both segments were archived with the history the roll-up replaced.
  std::size_t at = rolled.find("restore it with `compactor restore ");
  ASSERT_NE(at, std::string::npos);
  auto restored = test::run_cli({"restore", rolled.substr(at + std::string("restore it with `compactor restore ").size(), 71), "--archive",
                                 "archive"}, "", dir_.string());
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("compactor-summaries: 1;"), std::string::npos);
  EXPECT_NE(restored.out.find("compactor-summaries: 2;"), std::string::npos);
}

TEST_F(CompactionPolicy, SnipWithAShortMiddleDeclinesAndTheRunStillFits) {
  // The known case: 53 messages, ~106,000 chars; snip with the four-step reference design's
  // numbers (keep 3 + the newest 47) would cut a middle of two short messages (messages.3 and .4,
  // the second exchange). It declines; micro and summarize still run.
  std::vector<std::size_t> sizes(25, 4400);
  sizes[1] = 2;
  json::array input = session(sizes);
  ASSERT_EQ(input.size(), 53u);
  RunResult r = run_in(dir_,
                 "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: archive}\npipeline:\n"
                 "  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                 "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, min_chars: 120, until: target}\n"
                 "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 2000, keep_fraction: 0.5}\n",
                 input);
  EXPECT_EQ(status_of(r, 0), "declined") << r.result.out;
  EXPECT_EQ(status_of(r, 1), "committed") << r.result.out;
  EXPECT_EQ(r.result.exit_code, 0) << r.result.out << r.result.err;
  EXPECT_EQ(r.report.at("status"), "ok");
  EXPECT_LE(chars_out(r), 40000u);
}

TEST_F(CompactionPolicy, TheShippedDemoFitsTheKnown53MessageSession) {
  std::vector<std::size_t> sizes(25, 4400);
  sizes[1] = 2;
  std::string config = test::read_file(std::string(COMPACTOR_CONFIGS_DIR) + "/demo-50k-chars.yaml");
  RunResult r = run_in(dir_, config, session(sizes));
  EXPECT_EQ(r.result.exit_code, 0) << r.result.out << r.result.err;
  EXPECT_LE(chars_out(r), 40000u);
  fs::remove_all(dir_ / ".compactor");
}

TEST_F(CompactionPolicy, ARefusedCallThatNothingCompactsGoesBackToTheCaller) {
  // A summary and the newest exchange: reactive_compact has nothing older to summarize.
  RunResult first = run_in(dir_, kPolicy, session(std::vector<std::size_t>(80, 110), "src/a"));
  ASSERT_EQ(first.result.exit_code, 0);
  json::array tail_only;
  tail_only.push_back(first.output.at(0));
  for (std::size_t i = first.output.size() - 2; i < first.output.size(); ++i) tail_only.push_back(first.output.at(i));
  fs::create_directories(dir_);
  std::ofstream(dir_ / "c2.yaml") << "version: 1\nbudget: {unit: chars, limit: 20000}\narchive: {dir: archive}\npipeline: []\n"
                                     "on_prompt_too_long:\n  - stage: reactive_compact\n    params: {keep_messages: 2}\n";
  std::ofstream(dir_ / "tail.json") << json::serialize(tail_only);
  auto r = test::run_cli({"run", "--config", "c2.yaml", "--input", "tail.json", "--reason", "prompt_too_long"}, "", dir_.string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("status: not_compacted (exit 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing to summarize: before the newest exchange"), std::string::npos) << r.out;
}

TEST_F(CompactionPolicy, AnInputWithMoreThanFourCacheBreakpointsIsRefused) {
  json::array input = session({200, 200, 200, 200, 200});
  for (std::size_t i = 2; i + 2 < input.size(); i += 2)  // the five tool_result messages
    input[i].as_object()["content"].as_array()[0].as_object()["cache_control"] = json::object{{"type", "ephemeral"}};
  RunResult r = run_in(dir_, kPolicy, input);
  EXPECT_EQ(r.result.exit_code, 2) << r.result.out << r.result.err;
  EXPECT_NE(r.result.err.find("cache_control: the conversation has 5 cache_control breakpoints; the API allows 4"), std::string::npos)
      << r.result.err;
}

}  // namespace
}  // namespace compactor
