// A test kit test built outside the build tree's bin/ (as a team's own tests are, in their own
// project) finds the built-in stages `compactor run` finds: run_pipeline reads a config that
// names `micro` and `summarize`, with no plugin_dirs and no COMPACTOR_PLUGIN_PATH, and runs them.
#include "compactor/testkit.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace compactor;

TEST(TestKitElsewhere, RunPipelineFindsTheBuiltInStages) {
  ::unsetenv("COMPACTOR_PLUGIN_PATH");
  const fs::path dir = fs::temp_directory_path() / ("compactor-testkit-elsewhere-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path config = dir / "pipeline.yaml";
  std::ofstream(config) << "version: 1\n"
                           "budget: {unit: chars, limit: 400, target: 300}\n"
                           "pipeline:\n"
                           "  - stage: micro\n"
                           "    when: over_budget\n"
                           "    params: {keep_recent: 0, min_chars: 50, until: target}\n"
                           "  - stage: summarize\n"
                           "    when: over_budget\n";
  testkit::ConversationBuilder b;
  b.user("Read both files.");
  b.tool_call("toolu_1", "Read", {{"path", "a.txt"}}, std::string(300, 'a'));
  b.tool_call("toolu_2", "Read", {{"path", "b.txt"}}, std::string(300, 'b'));
  b.assistant("Both read.");
  testkit::PipelineRun run = testkit::run_pipeline(config.string(), b.build());
  EXPECT_EQ(run.error, "");
  EXPECT_EQ(run.stage("micro").status, testkit::Status::committed);
  EXPECT_NE(run.serialized().find("sha256:"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
