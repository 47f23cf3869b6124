// The budget from the model's window (`budget: {window: auto}`), the cost gate in a run, and the
// over-budget stages deferring to a request that asks the API to make room itself. Windows and
// prices come from a price table written here; expected sizes from the configs' numbers.
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "host/pipeline.hpp"
#include "model/conversation_host.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

class QuietLogger final : public StageLogger {
 public:
  void log(LogLevel, std::string_view) override {}
};

// Two models: a small window for the tests, and the default model's 200,000.
constexpr const char* kPrices =
    "version: 1\nsource: s\ndate: d\nwindow_source: w\nwindow_date: d\ndefault_model: big\nmodels:\n"
    "  small-1:\n    family: small\n    match: [small-1]\n    input: 3\n    cache_write: 3.75\n    cache_read: 0.30\n    output: 15\n"
    "    min_cacheable_tokens: 1024\n    context_window: 5000\n"
    "  big:\n    family: big\n    input: 3\n    cache_write: 3.75\n    cache_read: 0.30\n    output: 15\n    context_window: 200000\n";

std::string config(const std::string& window, const std::string& extra = "") {
  return "version: 1\nbudget: {window: " + window + ", trigger: 0.8, target: 0.6}\nmeter: {kind: chars4}\nprices: prices.yaml\n" +
         "archive: {dir: archive}\nplugin_dirs: [\"" + COMPACTOR_PLUGIN_DIR + "\"]\n" + extra +
         "pipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 1, min_chars: 120, until: target}\n";
}

// A request body for `model`: a prompt, then `n` reads of 1,600-char results, then a reply and a
// short answer.
std::string request(const std::string& model, std::size_t n, const std::string& more = "") {
  json::array m{json::object{{"role", "user"}, {"content", "read every log and summarize the failures"}}};
  for (std::size_t i = 0; i < n; ++i) {
    std::string id = "toolu_" + std::to_string(i);
    m.push_back(json::object{{"role", "assistant"},
                             {"content", json::array{json::object{{"type", "tool_use"}, {"id", id}, {"name", "Read"},
                                                                  {"input", json::object{{"file_path", "logs/" + std::to_string(i) + ".txt"}}}}}}});
    m.push_back(json::object{{"role", "user"},
                             {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id},
                                                                  {"content", std::string(1600, static_cast<char>('a' + i))}}}}});
  }
  m.push_back(json::object{{"role", "assistant"}, {"content", "Read them all."}});
  m.push_back(json::object{{"role", "user"}, {"content", "go on"}});
  json::object body{{"max_tokens", 1024}, {"messages", m}};
  if (!model.empty()) body["model"] = model;  // else a body that names no model
  std::string text = json::serialize(body);
  if (!more.empty()) text.insert(text.size() - 1, "," + more);
  return text;
}

struct RunResult {
  test::CommandResult cli;
  json::object report;
};

RunResult run(const test::ScratchFolder& dir, const std::string& yaml, const std::string& body, std::vector<std::string> extra = {}) {
  std::ofstream(dir / "prices.yaml") << kPrices;
  std::ofstream(dir / "c.yaml") << yaml;
  std::ofstream(dir / "in.json") << body;
  std::vector<std::string> args{"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json", "--report", "report.json"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r;
  r.cli = test::run_cli(args, "", dir.string());
  if (fs::exists(dir / "report.json")) r.report = json::parse(test::read_file((dir / "report.json").string())).as_object();
  return r;
}

// 9 reads: 4,098 chars4 tokens, over small-1's trigger (0.8 × 5,000) and under its window.
TEST(WindowBudget, TheRequestsModelGivesTheWindowAndTheBudgetIsItsShares) {
  test::ScratchFolder dir("window-auto");
  RunResult r = run(dir, config("auto"), request("small-1-20260101", 9));
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.out << r.cli.err;
  EXPECT_EQ(r.report.at("budget").at("limit").as_int64(), 4000);   // 0.8 × 5,000
  EXPECT_EQ(r.report.at("budget").at("target").as_int64(), 3000);  // 0.6 × 5,000
  EXPECT_EQ(r.report.at("model"), "small-1-20260101");
  EXPECT_EQ(r.report.at("window").at("tokens").as_int64(), 5000);
  EXPECT_EQ(r.report.at("window").at("from"), "small-1");
  EXPECT_NE(r.cli.out.find("budget 4000 tokens (target 3000) of a 5000-token window (small-1)"), std::string::npos) << r.cli.out;
  EXPECT_EQ(r.report.at("stages").at(0).at("status"), "committed");
  EXPECT_LE(r.report.at("output_size").at("tokens").as_int64(), 4000);  // micro alone, down to what it can
  // A run knows no previous call: the cache is cold and the gate, weighing it, commits.
  EXPECT_EQ(r.report.at("gate").at("cache"), "cold");
  EXPECT_EQ(r.report.at("gate").at("commit"), true);
  // The same request for the default model (200,000 tokens) is far within budget.
  RunResult big = run(dir, config("auto"), request("big", 9));
  EXPECT_EQ(big.report.at("budget").at("limit").as_int64(), 160000);
  EXPECT_EQ(big.report.at("stages").at(0).at("status"), "skipped");
  // No model named: the table's default, and the summary says so; --model names one.
  RunResult none = run(dir, config("auto"), request("", 9));
  EXPECT_NE(none.cli.out.find("of a 200000-token window (big, the table's default model: the request names no model)"), std::string::npos)
      << none.cli.out;
  RunResult named = run(dir, config("auto"), request("big", 9), {"--model", "small-1"});
  EXPECT_EQ(named.report.at("budget").at("limit").as_int64(), 4000);
  // A fixed window needs no model: 0.8 and 0.6 of it.
  RunResult fixed = run(dir, config("10000"), request("big", 9));
  EXPECT_EQ(fixed.report.at("budget").at("limit").as_int64(), 8000);
  EXPECT_EQ(fixed.report.at("window").at("from"), "budget.window");
}

TEST(WindowBudget, MistakesAreLocatedErrors) {
  test::ScratchFolder dir("window-errors");
  std::ofstream(dir / "prices.yaml") << kPrices;
  auto errors = [&](const std::string& yaml) {
    std::ofstream(dir / "c.yaml") << yaml;
    return test::run_cli({"validate", "--config", "c.yaml"}, "", dir.string()).err;
  };
  const std::string tail = "pipeline: []\n";
  EXPECT_NE(errors("version: 1\nbudget: {window: 200k}\nmeter: {kind: chars4}\n" + tail)
                .find("c.yaml:2:18: budget.window: expected auto (the model's, from the price table) or a number of tokens (at least 1000), got"),
            std::string::npos);
  EXPECT_NE(errors("version: 1\nbudget: {window: 9000, limit: 100}\nmeter: {kind: chars4}\n" + tail)
                .find("c.yaml:2:31: budget.limit: with budget.window the limit is budget.trigger, a share of the window; give one or the other"),
            std::string::npos);
  EXPECT_NE(errors("version: 1\nbudget: {window: 9000, trigger: 0.5, target: 0.7}\nmeter: {kind: chars4}\n" + tail).find("c.yaml:2:46: budget.target: expected a number from 0.01 to 0.5, got \"0.7\""),
            std::string::npos);
  EXPECT_NE(errors("version: 1\nbudget: {window: auto}\nmeter: {kind: chars4}\n" + tail)
                .find("c.yaml:2:18: budget.window: auto finds the window of the request's model in the price table: add `prices: prices.yaml`"),
            std::string::npos);
  EXPECT_NE(errors("version: 1\nbudget: {window: 9000}\n" + tail).find("c.yaml:2:18: budget.window: tokens need a meter"), std::string::npos);
  EXPECT_NE(errors("version: 1\nbudget: {window: 9000, unit: chars}\nmeter: {kind: chars4}\n" + tail)
                .find("c.yaml:2:30: budget.unit: a window is counted in tokens: leave budget.unit out or say tokens, got \"chars\""),
            std::string::npos);
  EXPECT_NE(errors("version: 1\nbudget: {limit: 9000, trigger: 0.5}\n" + tail).find("c.yaml:2:32: budget.trigger: a share of a window"),
            std::string::npos);
}

// The gate in a run, on the same request as the previous call left it cached: at 19 calls so far
// (a horizon of one call) masking rewrites more than one call's saving pays back.
TEST(CostGateRun, AWarmCacheDeclinesWhatDoesNotPayAColdOneCommitsAndPastHalfwayItCommits) {
  test::ScratchFolder dir("gate-run");
  std::ofstream(dir / "prices.yaml") << kPrices;
  std::ofstream(dir / "c.yaml") << config("auto");
  ::setenv("COMPACTOR_PLUGIN_PATH", COMPACTOR_PLUGIN_DIR, 1);
  auto loaded = load_pipeline_config((dir / "c.yaml").string());
  ::unsetenv("COMPACTOR_PLUGIN_PATH");
  ASSERT_TRUE(loaded.config) << loaded.errors.front();
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  ASSERT_TRUE(pipeline);
  QuietLogger log;
  ReadOptions read;
  read.format = InputFormat::request_body;
  auto input = read_conversation(request("small-1", 9), read);
  ASSERT_TRUE(input);
  RunOptions options;
  options.model = "small-1";
  options.archive_dir = (dir / "archive").string();
  options.cache = CacheState{input->size() - 2, 19, 10};  // the previous call sent all but the newest exchange, 10 s ago
  RunReport warm = pipeline->run(*input, options, log);
  ASSERT_TRUE(warm.gate);
  EXPECT_FALSE(warm.gate->commit) << warm.gate->to_string();
  EXPECT_GT(warm.gate->broken_usd, warm.gate->saved_usd);
  EXPECT_EQ(warm.status, RunStatus::declined);
  EXPECT_EQ(warm.exit_code(), kExitOk);
  EXPECT_FALSE(warm.first_changed_message);  // the input goes on as it was …
  EXPECT_EQ(find_receipts(warm.output->serialize()).size(), 0u);
  std::size_t files = 0;  // … and nothing was archived for it
  if (fs::exists(dir / "archive"))
    for (const auto& e : fs::recursive_directory_iterator(dir / "archive")) files += e.is_regular_file();
  EXPECT_EQ(files, 0u);
  // The same call after the cache's lifetime (300 s): cold, committed.
  options.cache->idle_s = 301;
  RunReport cold = pipeline->run(*input, options, log);
  ASSERT_TRUE(cold.gate);
  EXPECT_TRUE(cold.gate->commit);
  EXPECT_EQ(cold.status, RunStatus::ok);
  EXPECT_TRUE(cold.first_changed_message);
  // Past halfway from the trigger (4,000) to the window (5,000): committed whatever it costs.
  options.cache->idle_s = 10;
  auto bigger = read_conversation(request("small-1", 11), read);
  ASSERT_TRUE(bigger);
  ASSERT_GT(ConversationHost::with_meter(*bigger, pipeline->config().meter).size_in(SizeUnit::tokens), 4500u);
  options.cache->cached_messages = bigger->size() - 2;
  RunReport must = pipeline->run(*bigger, options, log);
  ASSERT_TRUE(must.gate);
  EXPECT_TRUE(must.gate->commit);
  EXPECT_TRUE(must.first_changed_message);
}

// A newest batch too large to send (budget_persist, a forced cut), then a summary from message 0:
// the gate weighs the summary against the history budget_persist left, declines it on a warm cache
// at a horizon of one call, and keeps the forced cut. Before, a committed budget_persist let the
// summary through unweighed. Small-1's prices; the summary keeps half the target (1,500 tokens)
// verbatim, so every size here is over the 1,024 cacheable tokens,
// so one call after reads (after persist − after summary) tokens less at $0.30 a million.
TEST(CostGateRun, AForcedCutIsKeptAndTheRewriteAfterItIsWeighed) {
  test::ScratchFolder dir("gate-forced");
  std::ofstream(dir / "prices.yaml") << kPrices;
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {window: auto, trigger: 0.8, target: 0.6}\nmeter: {kind: chars4}\nprices: prices.yaml\n"
                                   "archive: {dir: archive}\nplugin_dirs: [\"" COMPACTOR_PLUGIN_DIR "\"]\nsummarizer: {kind: extractive}\n"
                                   "pipeline:\n"
                                   "  - stage: budget_persist\n    params: {max_batch_chars: 5000, persist_chars: 2000, preview_chars: 200}\n"
                                   "  - stage: summarize\n    when: over_budget\n    params: {max_chars: 2000, keep_fraction: 0.5, min_growth: 0}\n";
  ::setenv("COMPACTOR_PLUGIN_PATH", COMPACTOR_PLUGIN_DIR, 1);
  auto loaded = load_pipeline_config((dir / "c.yaml").string());
  ::unsetenv("COMPACTOR_PLUGIN_PATH");
  ASSERT_TRUE(loaded.config) << loaded.errors.front();
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  ASSERT_TRUE(pipeline);
  // 8 reads of 1,600 chars, then a newest read of 6,000: its batch is over 5,000 chars.
  json::object body = json::parse(request("small-1", 8)).as_object();
  json::array& m = body["messages"].as_array();
  m.pop_back();
  m.pop_back();
  m.push_back(json::object{{"role", "assistant"},
                           {"content", json::array{json::object{{"type", "tool_use"}, {"id", "toolu_big"}, {"name", "Read"},
                                                                {"input", json::object{{"file_path", "logs/big.txt"}}}}}}});
  m.push_back(json::object{{"role", "user"},
                           {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", "toolu_big"},
                                                                {"content", std::string(6000, 'z')}}}}});
  ReadOptions read;
  read.format = InputFormat::request_body;
  auto input = read_conversation(json::serialize(body), read);
  ASSERT_TRUE(input);
  QuietLogger log;
  RunOptions options;
  options.model = "small-1";
  options.archive_dir = (dir / "archive").string();
  options.cache = CacheState{input->size() - 2, 19, 10};  // warm; 19 calls so far: a horizon of one call
  RunReport r = pipeline->run(*input, options, log);
  ASSERT_EQ(r.stages.size(), 2u);
  ASSERT_EQ(r.stages[0].status, StageStatus::committed);
  ASSERT_EQ(r.stages[1].status, StageStatus::committed);
  ASSERT_TRUE(r.gate) << "the summary after the forced cut went through unweighed";
  const double persisted = static_cast<double>(r.stages[0].after.sizes.tokens);
  const double summarized = static_cast<double>(r.stages[1].after.sizes.tokens);
  EXPECT_EQ(r.gate->horizon, 1u);
  EXPECT_NEAR(r.gate->saved_usd, (persisted - summarized) * 0.30 / 1e6, 1e-12);
  EXPECT_FALSE(r.gate->commit) << r.gate->to_string();
  EXPECT_GT(r.gate->broken_usd, r.gate->saved_usd);
  // The forced cut stays: only the newest message changed, and it names its receipt.
  ASSERT_TRUE(r.output);
  EXPECT_EQ(r.first_changed_message, input->size() - 1);
  EXPECT_EQ(r.output->size(), input->size());
  EXPECT_EQ(r.output_size.sizes.tokens, r.stages[0].after.sizes.tokens);
  EXPECT_NE(r.output->serialize().find("[compactor budget_persist:"), std::string::npos);
  EXPECT_EQ(r.output->serialize().find("[compactor summary]"), std::string::npos);
}

// A request that asks the API to compact or to clear tool uses: the over-budget stages defer to
// it (they would break the cache a second time); clearing thinking alone changes nothing of that.
TEST(NativeContextManagement, OverBudgetStagesDeferToTheApisOwnCompaction) {
  test::ScratchFolder dir("native");
  const std::string compact = R"("context_management":{"edits":[{"type":"compact_20260112","trigger":{"type":"input_tokens","value":150000}}]})";
  RunResult r = run(dir, config("auto"), request("small-1", 9, compact));
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.out << r.cli.err;
  EXPECT_EQ(r.report.at("status"), "deferred");
  EXPECT_EQ(r.report.at("stages").at(0).at("status"), "skipped");
  EXPECT_EQ(r.report.at("stages").at(0).at("reason"),
            "deferred: the request asks the API to make room itself (context_management: compact_20260112)");
  EXPECT_EQ(test::read_file((dir / "out.json").string()), request("small-1", 9, compact));  // the client's bytes
  RunResult clear = run(dir, config("auto"), request("small-1", 9, R"("context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]})"));
  EXPECT_EQ(clear.report.at("status"), "deferred");
  RunResult thinking = run(dir, config("auto"), request("small-1", 9, R"("context_management":{"edits":[{"type":"clear_thinking_20251015"}]})"));
  EXPECT_EQ(thinking.report.at("status"), "ok");
  EXPECT_EQ(thinking.report.at("stages").at(0).at("status"), "committed");
}

// The Responses API asks in its own shape (a list of edits): its adapter reads it, and the
// over-budget stages defer just the same; without it they compact.
TEST(NativeContextManagement, AResponsesRequestAskingForCompactionIsDeferredToo) {
  test::ScratchFolder dir("native-responses");
  json::array input{json::object{{"role", "user"}, {"content", "read every log and summarize the failures"}}};
  for (std::size_t i = 0; i < 9; ++i) {
    const std::string id = "call_" + std::to_string(i);
    input.push_back(json::object{{"type", "function_call"}, {"call_id", id}, {"name", "Read"},
                                 {"arguments", R"({"file_path":"logs/)" + std::to_string(i) + R"(.txt"})"}});
    input.push_back(json::object{{"type", "function_call_output"}, {"call_id", id}, {"output", std::string(1600, static_cast<char>('a' + i))}});
  }
  input.push_back(json::object{{"role", "assistant"}, {"content", "Read them all."}});
  input.push_back(json::object{{"role", "user"}, {"content", "go on"}});
  json::object body{{"model", "small-1"}, {"input", input}};
  RunResult plain = run(dir, config("auto"), json::serialize(body), {"--input-format", "responses"});
  EXPECT_EQ(plain.report.at("stages").at(0).at("status"), "committed") << plain.cli.err;
  body["context_management"] = json::array{json::object{{"type", "compaction"}, {"compact_threshold", 4000}}};
  RunResult r = run(dir, config("auto"), json::serialize(body), {"--input-format", "responses"});
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.out << r.cli.err;
  EXPECT_EQ(r.report.at("status"), "deferred");
  EXPECT_EQ(r.report.at("stages").at(0).at("reason"), "deferred: the request asks the API to make room itself (context_management: compaction)");
  EXPECT_EQ(test::read_file((dir / "out.json").string()), json::serialize(body));  // the client's bytes
}

}  // namespace
}  // namespace compactor
