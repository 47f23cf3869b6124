// Golden end-to-end cases for `compactor run`: tests/golden/run/<case>/ holds input.json,
// pipeline.yaml (and fit.yaml for a calibrated meter), a one-line intent.txt, expected_exit, expected_output.json (absent when nothing
// may be written), expected_report.json and optionally args (extra arguments, one a line).
// Expected files are written by hand (sizes computed independently of Compactor), never by the
// tool under test. Reports are compared as JSON after replacing the plugin folders with
// $PLUGINS / $TEST_PLUGINS, the scratch folder the case runs in (its files are copied there, and
// the resolved pipeline names them by absolute path) with $CASE, and zeroing wall times.
#include "support/test_support.hpp"

#include "compactor/build_fingerprint.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> cases() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(std::string(COMPACTOR_GOLDEN_DIR) + "/run"))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

boost::json::value normalized_report(std::string text, const fs::path& case_dir = {}) {
  if (!case_dir.empty()) text = replace_all(text, fs::canonical(case_dir).string(), "$CASE");
  text = replace_all(text, fs::canonical(COMPACTOR_TEST_PLUGIN_DIR).string(), "$TEST_PLUGINS");
  text = replace_all(text, fs::canonical(COMPACTOR_PLUGIN_DIR).string(), "$PLUGINS");
  boost::json::value v = boost::json::parse(text);
  for (auto& s : v.as_object()["stages"].as_array()) {
    s.as_object()["wall_us"] = 0;
    s.as_object().erase("archived");  // what each stage archived: archived_receipts_test holds it
  }
  v.as_object().erase("archived");
  return v;
}

class GoldenRun : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenRun, MatchesExpected) {
  std::string dir = std::string(COMPACTOR_GOLDEN_DIR) + "/run/" + GetParam();
  ASSERT_FALSE(test::read_file(dir + "/intent.txt").empty());
  test::ScratchFolder scratch("golden-" + GetParam());
  const fs::path& out_dir = scratch.path();
  std::string input_before = test::read_file(dir + "/input.json");
  // The run happens in a scratch folder holding copies of the case's files, so its archive
  // (.compactor/archive, relative to the working folder) never lands in the source tree.
  fs::copy_file(dir + "/input.json", out_dir / "input.json");
  fs::copy_file(dir + "/pipeline.yaml", out_dir / "pipeline.yaml");
  if (fs::exists(dir + "/fit.yaml")) fs::copy_file(dir + "/fit.yaml", out_dir / "fit.yaml");  // a calibrated meter's
  fs::path results = out_dir / "results";
  fs::create_directories(results);

  std::vector<std::string> args = {"run", "--config", "pipeline.yaml", "--input", "input.json", "--output",
                                   (results / "out.json").string(), "--report", (results / "report.json").string()};
  if (fs::exists(dir + "/args")) {
    std::ifstream extra(dir + "/args");
    for (std::string line; std::getline(extra, line);)
      if (!line.empty()) args.push_back(line);
  }
  ::setenv("COMPACTOR_PLUGIN_PATH", COMPACTOR_TEST_PLUGIN_DIR, 1);
  auto r = test::run_cli(args, "", out_dir.string());
  ::unsetenv("COMPACTOR_PLUGIN_PATH");

  EXPECT_EQ(r.exit_code, std::stoi(test::read_file(dir + "/expected_exit"))) << r.err;
  if (fs::exists(dir + "/expected_output.json")) {
    ASSERT_TRUE(fs::exists(results / "out.json")) << r.err;
    EXPECT_EQ(test::read_file((results / "out.json").string()), test::read_file(dir + "/expected_output.json"));
  } else {
    EXPECT_FALSE(fs::exists(results / "out.json")) << "an output was written although none may be";
  }
  if (fs::exists(dir + "/expected_report.json")) {
    ASSERT_TRUE(fs::exists(results / "report.json")) << r.err;
    EXPECT_EQ(normalized_report(test::read_file((results / "report.json").string()), out_dir),
              normalized_report(test::read_file(dir + "/expected_report.json")));
  } else {
    EXPECT_FALSE(fs::exists(results / "report.json")) << "a report was written for a run that never started";
  }
  if (fs::exists(dir + "/expected_stderr")) {
    EXPECT_EQ(r.err, test::read_file(dir + "/expected_stderr"));
  }
  EXPECT_EQ(test::read_file((out_dir / "input.json").string()), input_before) << "the input was modified";
  // Nothing but the two outputs, and no temporary file anywhere (the archive included).
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(results)) files += e.is_regular_file();
  EXPECT_EQ(files, std::size_t{fs::exists(dir + "/expected_output.json")} + std::size_t{fs::exists(dir + "/expected_report.json")});
  for (const auto& e : fs::recursive_directory_iterator(out_dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  // Every receipt the run wrote restores, through the CLI, to bytes that were in the input (one
  // the input already named was archived by an earlier run, in another archive).
  if (fs::exists(results / "out.json")) {
    std::string output = test::read_file((results / "out.json").string());
    for (std::size_t pos = output.find("sha256:"); pos != std::string::npos; pos = output.find("sha256:", pos + 1)) {
      std::string receipt = output.substr(pos, 71);
      if (input_before.find(receipt) != std::string::npos) continue;
      auto restored = test::run_cli({"restore", receipt}, "", out_dir.string());
      EXPECT_EQ(restored.exit_code, 0) << restored.err;
      EXPECT_NE(input_before.find(restored.out.substr(0, restored.out.find('\n'))), std::string::npos) << receipt;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenRun, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(RunCommand, BadConfigExits2AndWritesNothing) {
  test::ScratchFolder scratch("badconfig");
  const fs::path& dir = scratch.path();
  std::ofstream(dir / "bad.yaml") << "version: 1\nbudget: {limit: 10}\npipeline:\n  - stage: mirco\n";
  std::ofstream(dir / "in.json") << R"([{"role":"user","content":"hi"}])";
  auto r = test::run_cli({"run", "--config", "bad.yaml", "--input", "in.json", "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find(';')), "bad.yaml:4:12: pipeline[0].stage: unknown stage \"mirco\"");
  EXPECT_FALSE(fs::exists(dir / "out.json"));
}

TEST(RunCommand, BadInputExits2AndWritesNothing) {
  test::ScratchFolder scratch("badinput");
  const fs::path& dir = scratch.path();
  std::ofstream(dir / "in.json") << R"([{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"R","input":{}}]}])";
  auto r = test::run_cli({"run", "--config", std::string(COMPACTOR_CONFIGS_DIR) + "/demo-50k-chars.yaml", "--input", "in.json",
                          "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "in.json: pairing: messages.1: tool_use ids were found without tool_result blocks immediately after: t\n");
  EXPECT_FALSE(fs::exists(dir / "out.json"));
  r = test::run_cli({"run", "--config", std::string(COMPACTOR_CONFIGS_DIR) + "/demo-50k-chars.yaml", "--input", "in.json",
                     "--output", "in.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "compactor run: in.json: refusing to overwrite the input\n");
}

// Blobs written by a stage that ends `unchanged` are taken back, as for a decline (they used to be
// committed).
TEST(RunCommand, AnUnchangedStagesBlobsAreDropped) {
  test::ScratchFolder scratch("unchanged");
  const fs::path& dir = scratch.path();
  std::ofstream(dir / "p.yaml") << "version: 1\nbudget: {limit: 100000}\narchive: {dir: archive}\nplugin_dirs: [\"" +
                                       std::string(COMPACTOR_TEST_PLUGIN_DIR) + "\"]\npipeline:\n  - stage: archive_unchanged\n";
  std::ofstream(dir / "in.json") << R"([{"role":"user","content":"hi"}])";
  auto r = test::run_cli({"run", "--config", "p.yaml", "--input", "in.json", "--report", "r.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(test::read_file((dir / "r.json").string()).find("\"status\": \"unchanged\""), std::string::npos);
  std::size_t files = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir / "archive", ec)) files += e.is_regular_file();
  EXPECT_EQ(files, 0u) << "the unchanged stage's blob was committed";
}

TEST(RunCommand, ThrowingStageExits3WithTheStageAndFileAndWritesNoOutput) {
  test::ScratchFolder scratch("throws");
  const fs::path& dir = scratch.path();
  std::string plugin = std::string(COMPACTOR_LOADER_FIXTURE_DIR) + "/compactor_stage_fixture_throwing_run.so";
  std::ofstream(dir / "p.yaml") << "version: 1\nbudget: {limit: 10}\npipeline:\n  - stage: fixture_throwing_run\n    plugin: \"" + plugin + "\"\n";
  std::ofstream(dir / "in.json") << R"([{"role":"user","content":"hi"}])";
  auto r = test::run_cli({"run", "--config", "p.yaml", "--input", "in.json", "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "stage fixture_throwing_run (" + fs::canonical(plugin).string() + "): run threw: run boom\n");
  EXPECT_FALSE(fs::exists(dir / "out.json"));
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

TEST(PluginsCommand, ListsEveryPluginAndWhyOneWouldNotLoad) {
  std::string dir = COMPACTOR_LOADER_FIXTURE_DIR;
  auto r = test::run_cli({"plugins", "--plugin-dir", dir});
  EXPECT_EQ(r.exit_code, 3);  // some fixtures are refused on purpose
  EXPECT_NE(r.out.find("stage\tfixture_good\t" + dir + "/compactor_stage_fixture_good.so\tplugin fixture_good 1.2.3\tAPI 11\t" + std::string(kCompiler) + "\tok\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage\t-\t" + dir + "/compactor_stage_fixture_wrong_api.so\t-\tAPI 999\t-\trefused: " + dir +
                       "/compactor_stage_fixture_wrong_api.so: plugin API version 999, but this host implements version 11; "
                       "rebuild the plugin against this Compactor\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stage\tmicro\t" + std::string(COMPACTOR_PLUGIN_DIR) + "/compactor_stage_micro.so\tplugin micro 0.1.0\tAPI 11\t" + std::string(kCompiler) + "\tok\n"),
            std::string::npos) << r.out;
  auto only_real = test::run_cli({"plugins"});
  EXPECT_EQ(only_real.exit_code, 0) << only_real.out;
  // Summarizer backends are listed too, and checkers, and what a config names by path.
  EXPECT_NE(only_real.out.find("summarizer\tanthropic\t" + std::string(COMPACTOR_PLUGIN_DIR) +
                               "/compactor_summarizer_anthropic.so\tplugin "),
            std::string::npos)
      << only_real.out;
  auto tests = test::run_cli({"plugins", "--plugin-dir", COMPACTOR_TEST_PLUGIN_DIR});
  EXPECT_NE(tests.out.find("checker\tkeeps_first\t" + std::string(COMPACTOR_TEST_PLUGIN_DIR) +
                           "/compactor_checker_keeps_first.so\tplugin keeps_first 0.1.0\tAPI 11\t"),
            std::string::npos)
      << tests.out;
  fs::path config = fs::temp_directory_path() / ("compactor-plugins-by-path-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(config) << "version: 1\nbudget: {limit: 100}\npipeline:\n  - stage: split_pair\n    plugin: \"" COMPACTOR_TEST_PLUGIN_DIR
                           "/compactor_stage_split_pair.so\"\n";
  auto by_path = test::run_cli({"plugins", "--config", config.string()});
  fs::remove(config);
  EXPECT_NE(by_path.out.find("stage\tsplit_pair\t" + std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_stage_split_pair.so\tplugin "),
            std::string::npos)
      << by_path.out;
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

TEST(BenchCommand, ComparesPipelinesOverEverySessionOfAFolder) {
  auto r = test::run_cli({"bench", "--corpus", COMPACTOR_TEST_DATA_DIR, "--config", std::string(COMPACTOR_CONFIGS_DIR) + "/demo-50k-chars.yaml",
                          "--config", std::string(COMPACTOR_CONFIGS_DIR) + "/masking-only.yaml", "--config",
                          std::string(COMPACTOR_CONFIGS_DIR) + "/default.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // 4 messages arrays, 4 Claude Code logs, 1 trajectory, 1 Codex session (13 calls), 2 Gemini
  // CLI chats (10 and 2 model turns) and a Responses body (3 calls), replayed call by call (one call before each assistant
  // message; tests/bench has the hand-worked figures): the 50k demo compacts on some calls,
  // masking-only finds every call within its budget, and the default, at each model's window,
  // never needs to compact an old message: it only shapes new shell outputs as they arrive (which
  // breaks no cache), so it costs less than the uncompacted baseline and no session more.
  // A config's row of the main table (named by its file's stem; its meter column follows).
  auto row = [&](const std::string& config) {
    std::size_t at = r.out.find("| " + config + " | calibrated/");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  const std::string dir = std::string(COMPACTOR_CONFIGS_DIR) + "/";
  std::string demo = row("demo-50k-chars"), mask = row("masking-only"), def = row("default");
  std::string base = row("uncompacted");
  EXPECT_NE(demo.find(" | 13 | 214 | "), std::string::npos) << demo;
  EXPECT_EQ(demo.find(" | 13 | 214 | 0 | "), std::string::npos) << demo;  // it compacted
  EXPECT_NE(mask.find(" | 13 | 214 | 0 | 0 | 0 | 0 | "), std::string::npos) << mask;
  // Columns: config, meter, sessions, calls, compactions, declined, refusals, over budget, tail
  // alone over, summaries, tokens sent, cache read, cost, vs uncompacted, dearer sessions.
  std::vector<std::string> cells;
  for (std::size_t at = 1, next; (next = def.find(" |", at)) != std::string::npos; at = next + 2) cells.push_back(def.substr(at + 1, next - at - 1));
  ASSERT_GE(cells.size(), 15u) << def;
  EXPECT_EQ(cells[2] + " " + cells[3], "13 214") << def;
  EXPECT_GT(std::stoi(cells[4]), 0) << def;  // arrival shaped some new results
  EXPECT_EQ(cells[5] + " " + cells[6] + " " + cells[7] + " " + cells[8] + " " + cells[9], "0 0 0 0 0") << def;  // nothing older was cut
  EXPECT_EQ(cells[13].substr(0, 1), "-") << def;  // vs uncompacted
  EXPECT_EQ(cells[14], "0") << def;               // dearer sessions
  EXPECT_NE(base.find(" | 13 | 214 | 0 | 0 | 0 | 0 | "), std::string::npos) << base;
  // The tables the money question needs, and the sessions the demo made dearer, by name.
  for (const char* heading : {"Cost by what is billed:", "By source format:", "Dearer than uncompacted:"})
    EXPECT_NE(r.out.find(heading), std::string::npos) << heading;
  for (const char* source : {"| claude-code | ", "| codex | ", "| gemini-cli | ", "| openai | ", "| anthropic | "})
    EXPECT_NE(r.out.find(source), std::string::npos) << source;
  EXPECT_NE(r.out.find("- codex/rollout-codex-0.171-12-reads.jsonl (demo-50k-chars): $"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(default): $"), std::string::npos) << r.out;
  // --fail-if-dearer makes the exit status say so.
  auto strict = test::run_cli({"bench", "--corpus", std::string(COMPACTOR_TEST_DATA_DIR) + "/codex", "--config", dir + "demo-50k-chars.yaml",
                               "--fail-if-dearer"});
  EXPECT_EQ(strict.exit_code, 1) << strict.err;
  EXPECT_NE(strict.err.find("compactor bench: 1 session dearer than uncompacted where uncompacted fit the window"), std::string::npos)
      << strict.err;
  EXPECT_EQ(test::run_cli({"bench", "--corpus", std::string(COMPACTOR_TEST_DATA_DIR) + "/codex", "--config", dir + "default.yaml",
                           "--fail-if-dearer"}).exit_code, 0);
  // Its archives went to a scratch folder: nothing appeared in the working folder.
  EXPECT_FALSE(std::filesystem::exists(".compactor"));
}

}  // namespace
}  // namespace compactor
