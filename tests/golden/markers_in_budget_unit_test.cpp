// A marker must save space in the budget's own unit. Under a token budget a receipt marker (a
// 64-hex-digit receipt and its words) can cost more tokens than a short result, and a snip
// marker more than a short middle: micro then leaves that result, snip that middle, and the run
// goes on (they used to make candidates that grew, which no_growth rejected, stopping the run).
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// A user request, then `calls` exchanges whose results are the given texts, then a closing
// assistant text and a user follow-up.
std::string session(const std::vector<std::string>& results) {
  json::array m{json::object{{"role", "user"}, {"content", "look at the logs"}}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string id = "toolu_" + std::to_string(i);
    m.push_back(json::object{{"role", "assistant"},
                             {"content", json::array{json::object{{"type", "tool_use"}, {"id", id}, {"name", "Read"},
                                                                  {"input", json::object{{"path", "log" + std::to_string(i)}}}}}}});
    m.push_back(json::object{{"role", "user"},
                             {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id}, {"content", results[i]}}}}});
  }
  m.push_back(json::object{{"role", "assistant"}, {"content", "done"}});
  m.push_back(json::object{{"role", "user"}, {"content", "thanks"}});
  return json::serialize(m);
}

test::CommandResult run_in(const fs::path& dir, const std::string& config, const std::string& input) {
  std::ofstream(dir / "c.yaml") << config;
  std::ofstream(dir / "in.json") << input;
  return test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json", "--report", "report.json"}, "",
                       dir.string());
}

TEST(MarkersInTheBudgetUnit, MicroLeavesAResultWhoseMarkerCostsMoreTokens) {
  // 240 a's are a few dozen cl100k tokens; their marker (117 chars, a hex receipt) is more. The
  // prose result is the other way round.
  std::string prose;
  for (int i = 0; prose.size() < 6000; ++i) prose += "The build of module " + std::to_string(i) + " failed on ARM with error E" + std::to_string(i * 7) + ". ";
  test::ScratchFolder scratch("markers-micro");
  const fs::path& dir = scratch.path();
  auto r = run_in(dir,
                  "version: 1\nbudget: {unit: tokens, limit: 100}\nmeter: {kind: cl100k}\nrecent: {exchanges: 0}\n"
                  "archive: {dir: archive}\npipeline:\n  - stage: micro\n    params: {keep_recent: 0, min_chars: 120}\n",
                  session({std::string(240, 'a'), prose}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // still over a 100-token limit, but not stopped
  json::object report = json::parse(test::read_file((dir / "report.json").string())).as_object();
  EXPECT_EQ(report.at("status"), "over_budget") << r.out;
  const auto& micro = report.at("stages").as_array()[0].as_object();
  EXPECT_EQ(micro.at("status"), "committed") << r.out;
  std::string out = test::read_file((dir / "out.json").string());
  EXPECT_NE(out.find(std::string(240, 'a')), std::string::npos) << "the short result stays";
  EXPECT_EQ(out.find("The build of module 1 failed"), std::string::npos) << "the prose result is archived";
}

TEST(MarkersInTheBudgetUnit, SnipLeavesAMiddleNoLargerThanItsMarkerAndTheRunGoesOn) {
  // 53 messages: snip (over 50, keep 3 at the head) would cut a middle of two short messages.
  std::vector<std::string> results(25, "ok");
  results[0] = std::string(3000, 'x');  // something for micro to do afterwards
  test::ScratchFolder scratch("markers-snip");
  const fs::path& dir = scratch.path();
  auto r = run_in(dir,
                  "version: 1\nbudget: {unit: chars, limit: 1000}\nrecent: {exchanges: 1}\narchive: {dir: archive}\n"
                  "pipeline:\n  - stage: snip\n    params: {max_messages: 50, keep_head: 3}\n"
                  "  - stage: micro\n    when: over_budget\n    params: {keep_recent: 0, min_chars: 120}\n",
                  session(results));
  json::object report = json::parse(test::read_file((dir / "report.json").string())).as_object();
  const auto& stages = report.at("stages").as_array();
  EXPECT_EQ(stages[0].as_object().at("status"), "declined") << r.out;   // nothing safe to do: not rejected, not aborted
  EXPECT_EQ(stages[1].as_object().at("status"), "committed") << r.out;   // micro still ran
  EXPECT_NE(report.at("status"), "aborted") << r.out;
}

}  // namespace
}  // namespace compactor
