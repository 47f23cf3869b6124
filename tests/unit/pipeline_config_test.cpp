// The config loader: every kind of mistake an operator makes, each asserted as the exact line.
#include "support/test_support.hpp"

#include "host/pipeline_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("compactor-config-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the config (with the test plugins' folder as plugin_dirs) and loads it.
  ConfigLoadResult load(const std::string& body, bool with_test_plugins = true) {
    std::string text = "version: 1\n";
    if (with_test_plugins) text += "plugin_dirs: [\"" + std::string(COMPACTOR_TEST_PLUGIN_DIR) + "\"]\n";
    text += body;
    path_ = (dir_ / "pipeline.yaml").string();
    std::ofstream(path_) << text;
    return load_pipeline_config(path_);
  }
  std::string at(int line, int col) const { return path_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": "; }

  fs::path dir_;
  std::string path_;
};

const char* kBudget = "budget: {unit: chars, limit: 1000}\n";
const std::string kKnown = "known stages: archive_unchanged, arrival, budget_persist, compact_request, micro, misbehave, params_probe, reactive_compact, snip, split_pair, summarize, swap_exchanges";

TEST_F(ConfigTest, ValidConfigResolvesEverything) {
  auto r = load(std::string(kBudget) + "recent: {exchanges: 2}\ncheckers: {enabled: [pairing], replace_builtins: true, on_violation: skip}\n"
                "pipeline:\n  - stage: params_probe\n    when: {messages_over: 4}\n    params: {label: \"x\", ratio: 0.25}\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors.front());
  const PipelineConfig& c = *r.config;
  EXPECT_EQ(c.budget.limit, 1000u);
  EXPECT_EQ(c.budget.target, 1000u);  // defaults to the limit
  EXPECT_EQ(c.recent_exchanges, 2u);
  // The API's own rules run whatever the list says, so they are among the checkers that run.
  ASSERT_EQ(c.checkers.size(), 4u);
  EXPECT_EQ(c.checkers[0].name, "structure");
  EXPECT_EQ(c.checkers[3].name, "pairing");
  EXPECT_EQ(c.warnings, std::vector<std::string>{at(5, 21) + "checkers.enabled: replace_builtins leaves out the built-in safety "
                                                 "checkers pairs_unchanged, thinking_unchanged, recent_intact, request_kept, "
                                                 "archived, order: a stage that breaks their rules is committed"});
  EXPECT_EQ(c.on_violation, ViolationPolicy::skip);
  ASSERT_EQ(c.pipeline.size(), 1u);
  const auto& e = c.pipeline[0];
  EXPECT_EQ(e.when.kind, WhenKind::messages_over);
  EXPECT_EQ(e.when.messages, 4u);
  EXPECT_EQ(e.params.string("label"), "x");
  EXPECT_EQ(e.params.number("ratio"), 0.25);
  EXPECT_EQ(e.params.integer("count"), 3);  // default filled in
  EXPECT_EQ(e.params.string("mode"), "fast");
  EXPECT_EQ(e.registered->plugin->file, fs::canonical(std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_stage_params_probe.so").string());
}

TEST_F(ConfigTest, TypoInStageNameListsKnownStages) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: mirco\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(5, 12) + "pipeline[0].stage: unknown stage \"mirco\"; " + kKnown});
}

TEST_F(ConfigTest, AllUnknownStagesAreReportedAtOnce) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: mirco\n  - stage: micro\n  - stage: snipp\n");
  EXPECT_EQ(r.errors, (std::vector<std::string>{at(5, 12) + "pipeline[0].stage: unknown stage \"mirco\"; " + kKnown,
                                                at(7, 12) + "pipeline[2].stage: unknown stage \"snipp\"; " + kKnown}));
}

TEST_F(ConfigTest, UnknownKey) {
  auto r = load("budget: {unit: chars, limt: 1000, limit: 5}\npipeline: []\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(3, 23) + "budget.limt: unknown key; expected one of: unit, limit, target, window, trigger"});
}

TEST_F(ConfigTest, DuplicateKey) {
  auto r = load("budget:\n  limit: 1000\n  limit: 2000\npipeline: []\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(5, 3) + "budget.limit: duplicate key (first at line 4)"});
}

TEST_F(ConfigTest, WrongParamType) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: \"x\", count: ten}\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 33) + "pipeline[0].params.count: expected an integer from 1 to 10, got \"ten\""});
}

TEST_F(ConfigTest, QuotedNumberIsNotANumber) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: \"x\", count: \"10\"}\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 33) + "pipeline[0].params.count: expected an integer from 1 to 10, got the quoted string \"10\""});
}

TEST_F(ConfigTest, ValueOutOfRange) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: \"x\", count: 11, ratio: 1.5}\n");
  EXPECT_EQ(r.errors, (std::vector<std::string>{at(6, 33) + "pipeline[0].params.count: expected an integer from 1 to 10, got \"11\"",
                                                at(6, 44) + "pipeline[0].params.ratio: expected a number from 0 to 1, got \"1.5\""}));
}

// Numbers out of range were once "internal error: stoll", and a number of 30,000 digits
// overflowed the stack in std::regex. Each is one located line now.
TEST_F(ConfigTest, NumbersOutOfRangeAreLocatedErrors) {
  auto r = load("budget: {unit: chars, limit: 99999999999999999999}\n"
                "pipeline:\n  - stage: params_probe\n    params: {label: \"x\", count: -99999999999999999999, ratio: 1e999}\n");
  EXPECT_EQ(r.errors, (std::vector<std::string>{
                          at(3, 30) + "budget.limit: expected an integer ≥ 1, got \"99999999999999999999\" (out of range)",
                          at(6, 33) + "pipeline[0].params.count: expected an integer from 1 to 10, got \"-99999999999999999999\" (out of range)",
                          at(6, 63) + "pipeline[0].params.ratio: expected a number from 0 to 1, got \"1e999\" (out of range)"}));
  // An integer beyond 64 bits is still a number, just not one in range.
  r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: \"x\", ratio: 99999999999999999999}\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 33) + "pipeline[0].params.ratio: expected a number from 0 to 1, got \"99999999999999999999\""});
}

TEST_F(ConfigTest, AThirtyThousandDigitNumberIsALocatedError) {
  std::string digits(30000, '7');
  std::string start(32, '7');
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: " + digits + ", count: " + digits +
                ", ratio: " + digits + "." + digits + "}\n");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0], at(6, 21) + "pipeline[0].params.label: expected a string, got the number " + start +
                             "… (30000 characters); quote it if you mean the string");
  EXPECT_EQ(r.errors[1], at(6, 30030) + "pipeline[0].params.count: expected an integer from 1 to 10, got \"" + start +
                             "… (30000 characters)\" (out of range)");
  EXPECT_EQ(r.errors[2], at(6, 60039) + "pipeline[0].params.ratio: expected a number from 0 to 1, got \"" + start +
                             "… (60001 characters)\" (out of range)");
  EXPECT_FALSE(r.plugin_failure);
}

TEST_F(ConfigTest, MissingRequiredParamIsReportedAtItsParent) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {count: 2}\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 13) + "pipeline[0].params: missing required parameter \"label\" (a string)"});
  auto r2 = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n");
  EXPECT_EQ(r2.errors, std::vector<std::string>{at(5, 5) + "pipeline[0]: missing required parameter \"label\" (a string)"});
}

TEST_F(ConfigTest, MissingRequiredKeyIsReportedAtItsParent) {
  auto r = load("budget:\n  unit: bytes\npipeline: []\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(4, 3) + "budget: missing required key \"limit\""});
}

TEST_F(ConfigTest, Yaml11BooleanWhereAStringIsExpected) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: yes, enabled: on}\n");
  EXPECT_EQ(r.errors, (std::vector<std::string>{
                          at(6, 21) + "pipeline[0].params.label: expected a string, got yes, which YAML 1.1 reads as a boolean; quote it: \"yes\"",
                          at(6, 35) + "pipeline[0].params.enabled: expected true or false, got \"on\" (YAML 1.1 booleans are not accepted; write true or false)"}));
}

TEST_F(ConfigTest, UnknownParameterListsTheStagesParameters) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    params: {label: \"x\", cuont: 2}\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 26) + "pipeline[0].params.cuont: unknown parameter; params_probe takes: label, count, ratio, enabled, mode"});
}

TEST_F(ConfigTest, PluginPathThatDoesNotExist) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: micro\n    plugin: nowhere/compactor_stage_micro.so\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 13) + "pipeline[0].plugin: no such plugin file: " + (dir_ / "nowhere/compactor_stage_micro.so").string()});
  EXPECT_FALSE(r.plugin_failure);
}

TEST_F(ConfigTest, PluginRefusedByTheLoaderIsAPluginFailure) {
  std::string file = std::string(COMPACTOR_LOADER_FIXTURE_DIR) + "/compactor_stage_fixture_wrong_api.so";
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: fixture_wrong_api\n    plugin: \"" + file + "\"\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 13) + "pipeline[0].plugin: " + file +
                                               ": plugin API version 999, but this host implements version 11; rebuild the plugin against this Compactor"});
  EXPECT_TRUE(r.plugin_failure);
}

TEST_F(ConfigTest, WhenMustBeKnown) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: micro\n    when: sometimes\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(6, 11) + "pipeline[0].when: expected always, over_budget or {messages_over: N}, got \"sometimes\""});
}

TEST_F(ConfigTest, TargetAboveLimitAndWrongVersion) {
  auto r = load("budget: {limit: 10, target: 20}\npipeline: []\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(3, 29) + "budget.target: expected an integer from 1 to the limit 10, got \"20\""});
  path_ = (dir_ / "v2.yaml").string();
  std::ofstream(path_) << "version: 2\nbudget: {limit: 10}\npipeline: []\n";
  auto v = load_pipeline_config(path_);
  EXPECT_EQ(v.errors, std::vector<std::string>{at(1, 10) + "version: expected an integer from 1 to 1, got \"2\""});
}

TEST_F(ConfigTest, YamlSyntaxError) {
  auto r = load("budget: [1, 2\npipeline: []\n");
  EXPECT_EQ(r.errors, std::vector<std::string>{at(4, 9) + "YAML syntax error: end of sequence flow not found"});
}

TEST_F(ConfigTest, PrintPipelineRoundTrips) {
  auto r = load(std::string(kBudget) + "pipeline:\n  - stage: params_probe\n    when: {messages_over: 4}\n    params: {label: \"a \\\"b\\\"\", ratio: 1}\n"
                "on_prompt_too_long:\n  - stage: micro\n");
  ASSERT_TRUE(r.config) << r.errors.front();
  std::string printed = print_pipeline(*r.config);
  std::string again_path = (dir_ / "printed.yaml").string();
  std::ofstream(again_path) << printed;
  auto again = load_pipeline_config(again_path);
  ASSERT_TRUE(again.config) << again.errors.front();
  EXPECT_EQ(print_pipeline(*again.config), printed);
  EXPECT_EQ(again.config->pipeline[0].params.number("ratio"), 1.0);
  EXPECT_EQ(again.config->pipeline[0].params.string("label"), "a \"b\"");
}

TEST(ShippedConfigs, EveryConfigValidatesAndRoundTrips) {
  int count = 0;
  // The ready pipelines, and those with a model summarizer (validated, never run here).
  std::vector<std::string> files = test::ready_pipeline_configs();
  for (const auto& e : fs::directory_iterator(fs::path(COMPACTOR_CONFIGS_DIR) / "models")) files.push_back(e.path().string());
  for (const std::string& e : files) {
    ++count;
    auto r = load_pipeline_config(e);
    ASSERT_TRUE(r.config) << e << ": " << r.errors.front();
    auto v = test::run_cli({"validate", "--config", e});
    EXPECT_EQ(v.exit_code, 0) << v.err;
    EXPECT_EQ(v.out.rfind("OK ", 0), 0u) << v.out;
    std::string printed = print_pipeline(*r.config);
    fs::path tmp = fs::temp_directory_path() / ("compactor-printed-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(tmp) << printed;
    auto again = load_pipeline_config(tmp.string());
    fs::remove(tmp);
    ASSERT_TRUE(again.config) << again.errors.front();
    EXPECT_EQ(print_pipeline(*again.config), printed);
  }
  EXPECT_GE(count, 1);
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

const char* kTokens = "pipeline:\n  - stage: micro\n";

TEST_F(ConfigTest, TokensWithoutAMeterSayWhichMetersExist) {
  auto r = load(std::string("budget: {unit: tokens, limit: 1000}\n") + kTokens);
  EXPECT_EQ(r.errors, std::vector<std::string>{at(3, 16) + "budget.unit: tokens need a meter: add `meter: {kind: …}` with one "
                                                           "of chars4, cl100k, o200k, claude-legacy, calibrated"});
}

TEST_F(ConfigTest, MeterKindsAndFilesAreCheckedWhereTheyAreWritten) {
  auto unknown = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: gpt5}\n") + kTokens);
  ASSERT_EQ(unknown.errors.size(), 1u);
  EXPECT_EQ(unknown.errors[0].rfind(at(4, 15) + "meter.kind: expected one of", 0), 0u) << unknown.errors[0];

  auto no_fit = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: calibrated}\n") + kTokens);
  ASSERT_EQ(no_fit.errors.size(), 1u);
  EXPECT_NE(no_fit.errors[0].find("meter: missing required key \"file\""), std::string::npos) << no_fit.errors[0];

  auto missing = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: calibrated, file: nofit.yaml}\n") + kTokens);
  EXPECT_EQ(missing.errors, std::vector<std::string>{at(4, 33) + "meter.file: " + (dir_ / "nofit.yaml").string() +
                                                     ": cannot read: No such file or directory"});
  // Read like every input: /dev/zero is refused at once, not read forever.
  auto device = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: calibrated, file: /dev/zero}\n") + kTokens);
  EXPECT_EQ(device.errors, std::vector<std::string>{at(4, 33) + "meter.file: /dev/zero: is a character device, not a regular "
                                                    "file; give a file, or - for stdin"});

  std::ofstream(dir_ / "fit.yaml") << "version: 1\nbase: claude-legacy\nfamilies:\n  opus: {per_token: -2, per_message: 1}\n";
  auto bad = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: calibrated, file: fit.yaml}\n") + kTokens);
  EXPECT_EQ(bad.errors, std::vector<std::string>{at(4, 33) + "meter.file: " + (dir_ / "fit.yaml").string() +
                                                 ":4:9: families.opus.per_token: expected a number in (0, 100)"});

  auto family = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: cl100k, family: opus}\n") + kTokens);
  ASSERT_EQ(family.errors.size(), 1u);
  EXPECT_NE(family.errors[0].find("meter.family: only a calibrated meter has model families"), std::string::npos);
}

TEST_F(ConfigTest, AnExactMeterLoadsAndRoundTrips) {
  auto r = load(std::string("budget: {unit: tokens, limit: 1000}\nmeter: {kind: o200k}\n") + kTokens);
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors.front());
  ASSERT_TRUE(r.config->meter);
  EXPECT_EQ(r.config->meter->kind(), "o200k");
  EXPECT_EQ(r.config->meter->count_text("hello world"), 2u);
  EXPECT_NE(print_pipeline(*r.config).find("meter:\n  kind: \"o200k\"\n"), std::string::npos);
}

TEST_F(ConfigTest, RestoreViaNamesTheWayAndRoundTrips) {
  const std::string kEmpty = "budget: {limit: 100}\npipeline: []\n";
  auto cli = load("archive: {dir: \"/srv/compactor archive\"}\n" + kEmpty);
  ASSERT_TRUE(cli.config) << cli.errors.front();
  EXPECT_EQ(cli.config->restore_via, "cli");
  EXPECT_EQ(restore_phrase(*cli.config), "`compactor restore {receipt} --archive '/srv/compactor archive'`");
  EXPECT_EQ(print_pipeline(*cli.config).find("restore_via"), std::string::npos);  // the default goes unsaid
  auto plain = load(kEmpty);
  EXPECT_EQ(restore_phrase(*plain.config), "`compactor restore {receipt}`");

  auto mcp = load("archive: {dir: /srv/a, restore_via: mcp}\n" + kEmpty);
  ASSERT_TRUE(mcp.config) << mcp.errors.front();
  EXPECT_EQ(restore_phrase(*mcp.config), "the `restore` tool of the `compactor` MCP server with the receipt {receipt}");
  EXPECT_NE(print_pipeline(*mcp.config).find("archive:\n  dir: \"/srv/a\"\n  restore_via: \"mcp\"\n"), std::string::npos);

  auto phrase = load("archive: {dir: /srv/a, restore_via: \"`ssh b compactor restore {receipt}`\"}\n" + kEmpty);
  ASSERT_TRUE(phrase.config) << phrase.errors.front();
  EXPECT_EQ(restore_phrase(*phrase.config), "`ssh b compactor restore {receipt}`");

  EXPECT_EQ(load("archive: {dir: a, restore_via: \"x\\n{receipt}\"}\n" + kEmpty).errors,
            std::vector<std::string>{at(3, 32) + "archive.restore_via: expected a phrase on one line, without control characters"});
  EXPECT_EQ(load("archive: {dir: a, restore_via: \"" + std::string(300, 'x') + "{receipt}\"}\n" + kEmpty).errors,
            std::vector<std::string>{at(3, 32) + "archive.restore_via: expected a phrase of at most 300 chars, got 309"});
}

TEST(StageContextTest, HowToRestoreFillsEveryReceiptSlot) {
  struct NoLog final : StageLogger {
    void log(LogLevel, std::string_view) override {}
  } log;
  struct NoArchive final : Archive {
    Expected<std::string> put(std::string_view) override { return Error{"no"}; }
    Expected<std::string> put(std::string&&) override { return Error{"no"}; }
    Expected<std::string> put(HashedBlob&&) override { return Error{"no"}; }
    const std::string* find(std::string_view) const override { return nullptr; }
    bool holds(std::string_view, std::uint64_t, std::string_view) const override { return false; }
    std::optional<std::uint64_t> size_of(std::string_view) const override { return std::nullopt; }
  } archive;
  StageContext context(archive, log);
  EXPECT_EQ(context.how_to_restore("sha256:ab"), "`compactor restore sha256:ab`");
  context.restore_via = "{receipt} or {receipt}";
  EXPECT_EQ(context.how_to_restore("sha256:ab"), "sha256:ab or sha256:ab");
}

std::vector<std::string> checker_names(const PipelineConfig& c) {
  std::vector<std::string> out;
  for (const CheckerEntryConfig& e : c.checkers) out.push_back(e.name);
  return out;
}

const std::vector<std::string> kBuiltins = {"structure",    "pairing",   "unique_ids", "pairs_unchanged", "thinking_unchanged", "recent_intact",
                                            "request_kept", "no_growth", "archived",   "cache_control",   "order"};

TEST_F(ConfigTest, EnablingACheckerAddsItToTheBuiltInOnes) {
  auto added = load(std::string(kBudget) + "checkers: {enabled: [keeps_first]}\npipeline: []\n");
  ASSERT_TRUE(added.config) << added.errors.front();
  std::vector<std::string> expected = kBuiltins;
  expected.push_back("keeps_first");
  EXPECT_EQ(checker_names(*added.config), expected);
  EXPECT_TRUE(added.config->warnings.empty());
  EXPECT_EQ(added.config->checkers.back().params.integer("head"), 1);  // its default

  // The outside team's list: pairing and their own no longer switch the other built-ins off, and
  // the config is told so.
  auto mixed = load(std::string(kBudget) + "checkers: {enabled: [pairing, keeps_first]}\npipeline: []\n");
  ASSERT_TRUE(mixed.config) << mixed.errors.front();
  EXPECT_EQ(checker_names(*mixed.config), expected);
  EXPECT_EQ(mixed.config->warnings,
            std::vector<std::string>{at(4, 21) + "checkers.enabled: names built-in checkers but not structure, unique_ids, "
                                     "pairs_unchanged, thinking_unchanged, recent_intact, request_kept, no_growth, archived, "
                                     "cache_control, order, which run all the same: enabled adds to the built-in checkers "
                                     "(replace_builtins: true runs only those listed)"});

  auto replaced = load(std::string(kBudget) + "checkers: {enabled: [structure, keeps_first, order], replace_builtins: true}\npipeline: []\n");
  ASSERT_TRUE(replaced.config) << replaced.errors.front();
  EXPECT_EQ(checker_names(*replaced.config),
            (std::vector<std::string>{"pairing", "unique_ids", "cache_control", "structure", "keeps_first", "order"}));
  ASSERT_EQ(replaced.config->warnings.size(), 1u);
  EXPECT_NE(replaced.config->warnings[0].find("leaves out the built-in safety checkers pairs_unchanged, thinking_unchanged, "
                                              "recent_intact, request_kept, archived: "),
            std::string::npos)
      << replaced.config->warnings[0];
}

TEST_F(ConfigTest, ACheckerIsFoundByPluginWithItsParamsLikeAStage) {
  const std::string file = std::string(COMPACTOR_TEST_PLUGIN_DIR) + "/compactor_checker_keeps_first.so";
  auto r = load(std::string(kBudget) + "checkers:\n  enabled:\n    - checker: keeps_first\n      plugin: \"" + file +
                    "\"\n      params: {head: 2}\npipeline: []\n",
                false);
  ASSERT_TRUE(r.config) << r.errors.front();
  const CheckerEntryConfig& e = r.config->checkers.back();
  EXPECT_EQ(e.name, "keeps_first");
  ASSERT_NE(e.registered, nullptr);
  EXPECT_EQ(e.registered->file(), fs::canonical(file).string());
  EXPECT_EQ(e.params.integer("head"), 2);
  EXPECT_NE(print_pipeline(*r.config).find("    - order\n    - checker: \"keeps_first\"\n      plugin: \"" + fs::canonical(file).string() +
                                           "\"  # plugin keeps_first 0.1.0, API 11\n      params:\n        head: 2\n  on_violation: abort\n"),
            std::string::npos)
      << print_pipeline(*r.config);

  auto bad_value = load(std::string(kBudget) + "checkers: {enabled: [{checker: keeps_first, params: {head: -1}}]}\npipeline: []\n");
  EXPECT_EQ(bad_value.errors, std::vector<std::string>{at(4, 60) + "checkers.enabled[0].params.head: expected an integer ≥ 0, got \"-1\""});
  auto unknown = load(std::string(kBudget) + "checkers: {enabled: [{checker: keeps_first, params: {tail: 1}}]}\npipeline: []\n");
  EXPECT_EQ(unknown.errors, std::vector<std::string>{at(4, 54) + "checkers.enabled[0].params.tail: unknown parameter; checker keeps_first takes: head"});
  auto builtin = load(std::string(kBudget) + "checkers: {enabled: [{checker: order, params: {x: 1}}]}\npipeline: []\n");
  EXPECT_EQ(builtin.errors, std::vector<std::string>{at(4, 47) + "checkers.enabled[0]: \"order\" is a built-in checker: it takes no plugin and no params"});
  auto twice = load(std::string(kBudget) + "checkers: {enabled: [keeps_first, keeps_first]}\npipeline: []\n");
  EXPECT_EQ(twice.errors, std::vector<std::string>{at(4, 35) + "checkers.enabled[1]: checker \"keeps_first\" is enabled twice"});
  auto elsewhere = load(std::string(kBudget) + "checkers: {enabled: [{checker: keeps_first, plugin: \"" + std::string(COMPACTOR_TEST_PLUGIN_DIR) +
                        "/compactor_stage_split_pair.so\"}]}\npipeline: []\n", false);
  ASSERT_EQ(elsewhere.errors.size(), 1u);
  // Its declaration says so before it is loaded.
  EXPECT_NE(elsewhere.errors[0].find("compactor_stage_split_pair.so: plugin split_pair declares \"stage:split_pair\", not "
                                     "checker:keeps_first; refused before loading it (none of its code ran)"),
            std::string::npos) << elsewhere.errors[0];
}

}  // namespace
}  // namespace compactor
