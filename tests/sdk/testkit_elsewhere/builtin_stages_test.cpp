// A test kit test built outside the build tree's bin/ (as a team's own tests are, in their own
// project) finds the built-in stages and the meter data `compactor run` finds: run_pipeline reads
// a config that names `micro` and `summarize`, with no plugin_dirs and no COMPACTOR_PLUGIN_PATH,
// and runs them; a config whose budget is in o200k tokens runs as it does; and a test gets the
// host's meters for a stage of its own.
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

// The rank files are the tree's (or the prefix's) the test kit links, not beside this program.
TEST(TestKitElsewhere, RunPipelineCountsWithTheMeterTheConfigNames) {
  ::unsetenv("COMPACTOR_METER_DATA");
  const fs::path dir = fs::temp_directory_path() / ("compactor-testkit-meter-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path config = dir / "pipeline.yaml";
  std::ofstream(config) << "version: 1\n"
                           "budget: {unit: tokens, limit: 60, target: 40}\n"
                           "meter: {kind: o200k}\n"
                           "pipeline:\n"
                           "  - stage: micro\n"
                           "    when: over_budget\n"
                           "    params: {keep_recent: 0, min_chars: 50, until: target}\n";
  testkit::ConversationBuilder b;
  b.user("Read both files.");
  b.tool_call("toolu_1", "Read", {{"path", "a.txt"}}, std::string(300, 'a'));
  b.tool_call("toolu_2", "Read", {{"path", "b.txt"}}, std::string(300, 'b'));
  b.assistant("Both read.");
  testkit::PipelineRun run = testkit::run_pipeline(config.string(), b.build());
  EXPECT_EQ(run.error, "");
  EXPECT_EQ(run.stage("micro").status, testkit::Status::committed);
  fs::remove_all(dir);
}

// "hello world" is two o200k tokens; without a meter, a conversation counts chars / 4.
TEST(TestKitElsewhere, ATestCountsWithTheHostsMeters) {
  ::unsetenv("COMPACTOR_METER_DATA");
  const Conversation c = testkit::ConversationBuilder().user("hello world").build();
  std::shared_ptr<const Meter> o200k = testkit::meter("o200k");
  EXPECT_EQ(o200k, testkit::meter("o200k"));  // kept for the process: one meter, one cache
  EXPECT_EQ(testkit::metered(c, o200k).size_in(SizeUnit::tokens), 2u);
  EXPECT_EQ(c.size_in(SizeUnit::tokens), c.sizes().chars / 4);
  EXPECT_THROW(testkit::meter("o300k"), std::runtime_error);

  // A stage under a budget in tokens sees the conversation through that meter: one call of 300
  // 'a's is 38 o200k tokens, far under 300 tokens, but 75 chars / 4.
  testkit::ConversationBuilder b;
  b.user("Read it.");
  b.tool_call("toolu_1", "Read", {{"path", "a.txt"}}, std::string(300, 'a'));
  b.assistant("Read.");
  testkit::StageRunOptions options;
  options.budget = Budget{SizeUnit::tokens, 60, 60};
  options.meter = o200k;
  StageInfo probe;
  probe.name = "probe_tokens";
  probe.create = [](const ParamValues&) -> Expected<std::unique_ptr<Stage>> {
    struct Probe final : Stage {
      StageResult run(const Conversation& committed, const StageContext& context) override {
        return StageResult::decline(std::to_string(context.size(committed)));
      }
    };
    return std::unique_ptr<Stage>(std::make_unique<Probe>());
  };
  testkit::StageRun metered_run = testkit::run_stage_checked(probe, b.build(), options);
  options.meter = nullptr;
  testkit::StageRun unmetered_run = testkit::run_stage_checked(probe, b.build(), options);
  EXPECT_LT(std::stoul(metered_run.reason), std::stoul(unmetered_run.reason)) << metered_run.reason << " " << unmetered_run.reason;
}

}  // namespace
