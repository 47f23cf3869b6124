// `compactor print-pipeline` is a fixed point from any folder: printed from one working folder with
// a config whose paths are relative to it, saved elsewhere, then validated and printed again from a
// third folder, it is accepted and prints the same text. Every plugin (a stage found in a relative
// plugin_dirs, a checker found there) is resolved to its file.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;

TEST(PrintPipeline, IsAFixedPointFromAnyFolder) {
  test::ScratchFolder dir("print-pipeline-fixed-point");
  fs::create_directories(dir / "project" / "my-plugins");
  for (const char* file : {"compactor_stage_split_pair.so", "compactor_checker_keeps_first.so"})
    fs::copy_file(fs::path(COMPACTOR_TEST_PLUGIN_DIR) / file, dir / "project" / "my-plugins" / file);
  fs::copy_file(fs::path(COMPACTOR_GOLDEN_DIR) / "run" / "tokens_calibrated" / "fit.yaml", dir / "project" / "fit.yaml");
  fs::copy_file(fs::path(COMPACTOR_CONFIGS_DIR) / "prices.yaml", dir / "project" / "prices.yaml");
  std::ofstream(dir / "project" / "compactor.yaml")
      << "version: 1\nbudget: {unit: tokens, limit: 5000}\nmeter: {kind: calibrated, file: fit.yaml}\nprices: prices.yaml\n"
         "plugin_dirs: [my-plugins]\narchive: {dir: .compactor/archive, restore_via: mcp}\n"
         "checkers: {enabled: [{checker: keeps_first, params: {head: 2}}]}\n"
         "pipeline:\n  - stage: split_pair\n  - stage: micro\n    when: over_budget\n";
  fs::create_directories(dir / "saved");
  fs::create_directories(dir / "elsewhere");

  // Printed from the folder above the project, the config named relative to it.
  auto printed = test::run_cli({"print-pipeline", "--config", "project/compactor.yaml"}, "", dir.string());
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const std::string project = fs::canonical(dir / "project").string();
  for (const std::string& line :
       {"plugin_dirs:\n  - \"" + project + "/my-plugins\"\n", "  file: \"" + project + "/fit.yaml\"\n",
        "prices: \"" + project + "/prices.yaml\"\n", "    plugin: \"" + project + "/my-plugins/compactor_stage_split_pair.so\"",
        "    - checker: \"keeps_first\"\n      plugin: \"" + project + "/my-plugins/compactor_checker_keeps_first.so\"",
        std::string("  restore_via: \"mcp\"\n")})
    EXPECT_NE(printed.out.find(line), std::string::npos) << line << "\nnot in:\n" << printed.out;
  std::ofstream(dir / "saved" / "resolved.yaml") << printed.out;

  // Read from a third folder: accepted, and printed the same.
  auto validated = test::run_cli({"validate", "--config", "../saved/resolved.yaml"}, "", (dir / "elsewhere").string());
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_EQ(validated.err, "");  // and nothing to warn about
  auto again = test::run_cli({"print-pipeline", "--config", "../saved/resolved.yaml"}, "", (dir / "elsewhere").string());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, printed.out);
}

// Under `replace_builtins: true` the Messages API's rules still run, so print-pipeline lists them
// with the checkers named, and says what validate says about the safety checkers left out.
TEST(PrintPipeline, ReplaceBuiltinsListsTheRulesThatRunAndWarns) {
  test::ScratchFolder dir("print-pipeline-replace-builtins");
  std::ofstream(dir / "p.yaml") << "version: 1\nbudget: {unit: chars, limit: 5000}\n"
                                   "checkers: {enabled: [pairing, no_growth], replace_builtins: true}\npipeline: []\n";
  auto printed = test::run_cli({"print-pipeline", "--config", "p.yaml"}, "", dir.string());
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_NE(printed.out.find("checkers:\n  enabled: [structure, unique_ids, cache_control, pairing, no_growth]\n"
                             "  replace_builtins: true\n"),
            std::string::npos)
      << printed.out;
  EXPECT_NE(printed.err.find("p.yaml:3:21: checkers.enabled: replace_builtins leaves out the built-in safety checkers "
                             "pairs_unchanged, thinking_unchanged, recent_intact, request_kept, archived, order: a stage that "
                             "breaks their rules is committed"),
            std::string::npos)
      << printed.err;
  auto validated = test::run_cli({"validate", "--config", "p.yaml"}, "", dir.string());
  EXPECT_EQ(validated.err, printed.err);
}

}  // namespace
}  // namespace compactor
