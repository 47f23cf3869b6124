// A plugin cannot take the host down: `compactor run` runs the pipeline in a child process, so a
// stage that calls exit(0), aborts, segfaults, overflows its stack or loops forever ends the run
// with exit 3 and one line naming the stage and its plugin, writes no output and no report, and
// leaves no temporary file in the archive (the stage had archived a blob before failing).
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;

struct Fault {
  std::string mode;
  std::string expected;  // in the error line, after the stage and plugin
  int timeout_ms = 10000;  // a crash under ASan takes a while to report: only the hang is timed out
};

TEST(PluginFaults, AStageThatTakesTheProcessDownIsReportedAndNothingIsWritten) {
  const std::string plugin = std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_stage_misbehave.so";
  const std::vector<Fault> faults = {
      {"exit", "ended the process with exit status 0; nothing was written"},
      {"abort", "ended the process with "},   // SIGABRT, or the sanitizer's exit status
      {"segv", "ended the process with "},
      {"overflow", "ended the process with "},
      {"hang", "ran past limits.stage_timeout_ms (300 ms) and was stopped; nothing was written", 300},
  };
  for (const auto& f : faults) {
    fs::path dir = fs::temp_directory_path() / ("compactor-fault-" + f.mode + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 100}\narchive: {dir: archive}\n"
                                  << "limits: {stage_timeout_ms: " << f.timeout_ms << "}\npipeline:\n  - stage: misbehave\n    plugin: " << plugin
                                  << "\n    params: {mode: " << f.mode << "}\n";
    fs::copy_file(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"), dir / "in.json");
    auto r = test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json", "--report", "report.json"},
                           "", dir.string());
    EXPECT_EQ(r.exit_code, 3) << f.mode << ": " << r.out << r.err;
    const std::string prefix = "compactor run: stage misbehave (plugin " + plugin + ") ";
    EXPECT_NE(r.err.find(prefix + f.expected), std::string::npos) << f.mode << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.json")) << f.mode;
    EXPECT_FALSE(fs::exists(dir / "report.json")) << f.mode;
    // The archive may hold folders; it holds no file.
    if (fs::exists(dir / "archive")) {
      for (const auto& e : fs::recursive_directory_iterator(dir / "archive")) EXPECT_TRUE(e.is_directory()) << f.mode << ": left " << e.path();
    }
    fs::remove_all(dir);
  }
}

TEST(PluginFaults, AWellBehavedRunInTheChildWritesAsBefore) {
  const std::string plugin = std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_stage_misbehave.so";
  fs::path dir = fs::temp_directory_path() / ("compactor-fault-none-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 1000000}\narchive: {dir: archive}\n"
                                << "pipeline:\n  - stage: misbehave\n    plugin: " << plugin << "\n    params: {mode: none}\n";
  fs::copy_file(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"), dir / "in.json");
  auto r = test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json", "--report", "report.json"}, "",
                         dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(test::read_file((dir / "out.json").string()), test::read_file((dir / "in.json").string()));
  EXPECT_NE(test::read_file((dir / "report.json").string()).find("\"status\": \"ok\""), std::string::npos);
  EXPECT_NE(r.out.find("status: ok (exit 0)"), std::string::npos);
  fs::remove_all(dir);
}

// A factory that refuses the values it is given (an Error, not an exception) says the config is
// wrong for it, like a value its schema refuses: exit 2, where a plugin that fails exits 3.
TEST(PluginFaults, AFactorysOwnRefusalIsABadConfig) {
  const std::string plugin = std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_stage_params_probe.so";
  test::ScratchFolder dir("factory-refusal");
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 100}\npipeline:\n  - stage: params_probe\n    plugin: "
                                << plugin << "\n    params: {label: refuse}\n";
  fs::copy_file(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"), dir / "in.json");
  const std::string line = "c.yaml:4:5: pipeline[0]: stage params_probe (" + fs::canonical(plugin).string() +
                           "): label \"refuse\" is one this stage refuses\n";
  auto validated = test::run_cli({"validate", "--config", "c.yaml"}, "", dir.string());
  EXPECT_EQ(validated.exit_code, 2);
  EXPECT_EQ(validated.err, line);
  auto run = test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json"}, "", dir.string());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, line);
  EXPECT_FALSE(fs::exists(dir / "out.json"));
}

}  // namespace
}  // namespace compactor
