// Checkers beyond the pairing rules: the built-in `order` checker, and a team's own checker
// loaded from a plugin and enabled by name, reported like a built-in one.
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

const std::string kInput = R"([{"role":"user","content":"read both files and compare them line by line"},
{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.txt"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":")" + std::string(1500, 'A') + R"("}]},
{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"b.txt"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":")" + std::string(1500, 'B') + R"("}]},
{"role":"assistant","content":"They differ in every line."},
{"role":"user","content":"thanks"}])";

class CheckerPlugins : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("compactor-checkers-" + std::to_string(::getpid()));
  void SetUp() override {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "in.json") << kInput;
  }
  void TearDown() override { fs::remove_all(dir_); }
  test::CommandResult run(const std::string& config) {
    std::ofstream(dir_ / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 2000}\nrecent: {exchanges: 0}\narchive: {dir: archive}\n"
                                      "plugin_dirs: [\"" COMPACTOR_TEST_PLUGIN_DIR "\"]\n" + config;
    return test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json", "--report", "report.json"}, "",
                         dir_.string());
  }
  json::object stage(std::size_t i) {
    return json::parse(test::read_file((dir_ / "report.json").string())).as_object().at("stages").as_array().at(i).as_object();
  }
};

TEST_F(CheckerPlugins, SwappingTwoWholeExchangesIsRejectedByOrder) {
  auto r = run("pipeline:\n  - stage: swap_exchanges\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto s = stage(0);
  EXPECT_EQ(s.at("status"), "rejected");
  ASSERT_EQ(s.at("violations").as_array().size(), 1u) << json::serialize(s);
  EXPECT_EQ(std::string(s.at("violations").as_array()[0].as_string()),
            "order: messages.3: input messages.1 is kept after input messages.4, which followed it; kept messages must stay "
            "in their order (stage swap_exchanges, plugin " +
                fs::canonical(std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_stage_swap_exchanges.so").string() + ")");
  // Nothing committed: the output is the input.
  EXPECT_EQ(json::parse(test::read_file((dir_ / "out.json").string())), json::parse(kInput));
}

TEST_F(CheckerPlugins, APluginCheckerRejectsACandidateLikeABuiltInOne) {
  auto r = run(
      "checkers:\n  enabled: [structure, pairing, unique_ids, archived, keeps_first]\n  on_violation: skip\n"
      "pipeline:\n  - stage: summarize\n  - stage: micro\n    params: {keep_recent: 0, min_chars: 0}\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto summarize = stage(0);
  EXPECT_EQ(summarize.at("status"), "rejected") << json::serialize(summarize);
  ASSERT_EQ(summarize.at("violations").as_array().size(), 1u);
  EXPECT_EQ(std::string(summarize.at("violations").as_array()[0].as_string()).rfind(
                "keeps_first: messages.0: the first message (the user's task) was replaced (stage summarize, plugin ", 0),
            0u)
      << json::serialize(summarize);
  // Skipped, as a built-in rejection would be: the next stage ran, and the run says it was rejected.
  EXPECT_EQ(stage(1).at("status"), "committed");
  EXPECT_NE(r.out.find("status: rejected (exit 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("keeps_first: messages.0: the first message (the user's task) was replaced"), std::string::npos)
      << "every violation is printed on stderr: " << r.err;
}

TEST_F(CheckerPlugins, AnUnknownCheckerIsALocatedConfigError) {
  auto r = run("checkers:\n  enabled: [structure, nonesuch]\npipeline: []\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("c.yaml:7:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checkers.enabled[1]: unknown checker \"nonesuch\"; known checkers: structure, pairing"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("compactor_checker_nonesuch.so on the plugin search path (none found)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace compactor
