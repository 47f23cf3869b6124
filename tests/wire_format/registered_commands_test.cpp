// A wire format, a built-in checker and a summarizing stage of a team's own, each registered in
// this program's main with one line (nothing in framework/ names them), are used by the commands
// exactly as the compiled-in ones are: this program runs `check`, `import`, `run`, `bench` and
// serve's --help in process (`self cli COMMAND …`, the commands' own code), and each of them reads
// the team's form of input (detected from its bytes, listed in --help), runs the team's checker
// with no config naming it, and the bench counts the team's stage's summaries.
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

test::CommandResult self(std::vector<std::string> args, const std::string& cwd = "") {
  args.insert(args.begin(), "cli");
  return test::run_program("/proc/self/exe", args, "", cwd);
}

// A gateway request body: the task (`task`), `reads` reads of 900-char results, then a reply and
// a request. A summary quotes the task verbatim, so a secret in it is in every candidate.
std::string gateway_body(std::size_t reads, const std::string& task = "read every log and summarize the failures") {
  json::array m{json::object{{"role", "user"}, {"content", task}}};
  for (std::size_t i = 0; i < reads; ++i) {
    const std::string id = "toolu_" + std::to_string(i);
    m.push_back(json::object{{"role", "assistant"},
                             {"content", json::array{json::object{{"type", "tool_use"}, {"id", id}, {"name", "Read"},
                                                                  {"input", json::object{{"path", "log" + std::to_string(i)}}}}}}});
    m.push_back(json::object{{"role", "user"},
                             {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id},
                                                                  {"content", std::string(900, static_cast<char>('a' + i % 26))}}}}});
  }
  m.push_back(json::object{{"role", "assistant"}, {"content", "Read them all."}});
  m.push_back(json::object{{"role", "user"}, {"content", "go on"}});
  return json::serialize(json::object{{"model", "claude-sonnet-4-5"}, {"gateway_session", "s1"}, {"max_tokens", 64}, {"messages", m}});
}

std::string write(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text;
  return file.string();
}

TEST(RegisteredEverywhere, TheFormIsListedInEachCommandsHelpAndServesHelpNamesTheApi) {
  for (const char* command : {"check", "run", "count", "import"}) {
    auto r = self({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("|team-gateway"), std::string::npos) << command << ": " << r.out;
    EXPECT_NE(r.out.find("team-gateway a team gateway's request body"), std::string::npos) << command << ": " << r.out;
  }
  auto serve = self({"serve", "--help"});
  EXPECT_NE(serve.out.find("  POST /gateway/v1/chat                   Team gateway                upstream gateway\n"), std::string::npos)
      << serve.out;
  EXPECT_NE(serve.out.find(" or gateway\n                         (default http://127.0.0.1:9);"), std::string::npos) << serve.out;
}

TEST(RegisteredEverywhere, CheckAndImportReadTheFormAndRunTheTeamsChecker) {
  test::ScratchFolder dir("registered-check");
  const std::string clean = write(dir.path() / "clean.json", gateway_body(3));
  const std::string secret = write(dir.path() / "secret.json", gateway_body(3, "read every log, the key is GATEWAY-SECRET"));

  auto ok = self({"check", "--input", clean});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto refused = self({"check", "--input", secret});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find(secret + ": team_no_secrets: messages.0: a text block holds the team's secret marker"), std::string::npos)
      << refused.err;

  auto imported = self({"import", "--input", clean, "--report", (dir.path() / "report.json").string()});
  EXPECT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  EXPECT_EQ(json::parse(test::read_file((dir.path() / "report.json").string())).at("format"), "team-gateway");
  auto failed = self({"import", "--input", secret, "--input-format", "team-gateway"});
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_NE(failed.out.find("FAIL " + secret + ": team_no_secrets: messages.0"), std::string::npos) << failed.out;
}

TEST(RegisteredEverywhere, RunRejectsACandidateTheTeamsCheckerRefusesAndWritesTheFormBack) {
  test::ScratchFolder dir("registered-run");
  const std::string config = write(dir.path() / "c.yaml", "version: 1\nbudget: {unit: chars, limit: 3000, target: 2000}\n"
                                                          "archive: {dir: archive}\npipeline:\n"
                                                          "  - stage: team_summary\n    when: over_budget\n    params: {max_chars: 600}\n");
  const std::string clean = write(dir.path() / "clean.json", gateway_body(6));
  auto r = self({"run", "--config", config, "--input", clean, "--output", "out.json", "--report", "report.json"}, dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object report = json::parse(test::read_file((dir.path() / "report.json").string())).as_object();
  EXPECT_EQ(report.at("stages").at(0).at("status"), "committed");
  EXPECT_EQ(json::parse(test::read_file((dir.path() / "out.json").string())).at("gateway_session"), "s1");  // the form's own body

  // The task holds a secret: the summary quotes it, and the team's checker, which no config
  // names, rejects the candidate.
  const std::string secret = write(dir.path() / "secret.json", gateway_body(6, "read every log, the key is GATEWAY-SECRET"));
  auto rejected = self({"run", "--config", config, "--input", secret, "--output", "out.json"}, dir.path().string());
  EXPECT_EQ(rejected.exit_code, 1);
  EXPECT_NE(rejected.err.find(": a text block holds the team's secret marker (stage team_summary"), std::string::npos) << rejected.err;
  EXPECT_NE(rejected.err.find("team_no_secrets: messages."), std::string::npos) << rejected.err;
}

TEST(RegisteredEverywhere, BenchImportsTheFormCountsTheTeamsSummariesAndRunsItsChecker) {
  test::ScratchFolder dir("registered-bench");
  fs::create_directories(dir.path() / "corpus");
  write(dir.path() / "corpus" / "session.json", gateway_body(8));
  const std::string config = write(dir.path() / "c.yaml", "version: 1\nbudget: {unit: chars, limit: 4000, target: 2500}\n"
                                                          "pipeline:\n  - stage: team_summary\n    when: over_budget\n"
                                                          "    params: {max_chars: 600}\n");
  const std::vector<std::string> bench = {"bench", "--config", "team=" + config, "--prices", std::string(COMPACTOR_CONFIGS_DIR) + "/prices.yaml",
                                          "--meter", "chars4", "--jobs", "1"};
  std::vector<std::string> args = bench;
  args.insert(args.end(), {"--corpus", (dir.path() / "corpus").string()});
  auto r = self(args, dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The config's row of the main table: summaries is its tenth column.
  const std::size_t row_at = r.out.find("| team | chars4 |");
  ASSERT_NE(row_at, std::string::npos) << r.out;
  const std::string row = r.out.substr(row_at);
  std::vector<std::string> cells;
  for (std::size_t at = 0, next; (next = row.find(" | ", at)) != std::string::npos && cells.size() < 10; at = next + 3)
    cells.push_back(row.substr(at, next - at));
  ASSERT_EQ(cells.size(), 10u) << r.out;
  EXPECT_GT(std::stoi(cells[9]), 0) << r.out;
  EXPECT_NE(r.out.find("| team-gateway | team | 1 |"), std::string::npos) << r.out;

  fs::create_directories(dir.path() / "secret");
  write(dir.path() / "secret" / "session.json", gateway_body(8, "read every log, the key is GATEWAY-SECRET"));
  args = bench;
  args.insert(args.end(), {"--corpus", (dir.path() / "secret").string()});
  auto refused = self(args, dir.path().string());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE((refused.out + refused.err).find("team_summary rejected: team_no_secrets: messages."), std::string::npos)
      << refused.out << refused.err;
}

}  // namespace
}  // namespace compactor
