// parse → check → serialize of a ≥ 10 MB generated conversation, against plain Boost.JSON
// parse + serialize of the same bytes, in the same binary. Reports bytes/s.
#include "compactor/active_request.hpp"
#include "compactor/builtin_checkers.hpp"
#include "compactor/conversation_reader.hpp"
#include "compactor/pipeline.hpp"

#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

namespace {

namespace json = boost::json;

// A realistic agent history: tool batches with results of mixed sizes, thinking, text.
std::string generate_conversation(std::size_t min_bytes) {
  std::mt19937_64 rng(42);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::string words[] = {"error", "build", "src/main.cpp", "TODO", "return", "0x1f", "héllo", "ok", "{", "}", "\"quoted\""};
  auto text = [&](int n) {
    std::string s;
    while (static_cast<int>(s.size()) < n) s += words[pick(0, 10)] + (pick(0, 9) == 0 ? "\n" : " ");
    return s;
  };
  std::string out = "[";
  out += json::serialize(json::object{{"role", "user"}, {"content", "please fix the failing build"}});
  std::size_t id = 0;
  while (out.size() < min_bytes) {
    json::array content;
    if (pick(0, 2) == 0) content.push_back(json::object{{"type", "thinking"}, {"thinking", text(300)}, {"signature", text(80)}});
    content.push_back(json::object{{"type", "text"}, {"text", text(pick(20, 200))}});
    std::vector<std::string> ids;
    for (int k = pick(1, 3); k > 0; --k) {
      ids.push_back("toolu_" + std::to_string(id++));
      content.push_back(json::object{{"type", "tool_use"}, {"id", ids.back()}, {"name", "Bash"},
                                     {"input", json::object{{"command", text(40)}, {"timeout", 1.0}}}});
    }
    out += "," + json::serialize(json::object{{"role", "assistant"}, {"content", content}});
    json::array results;
    for (const auto& tid : ids)
      results.push_back(json::object{{"type", "tool_result"}, {"tool_use_id", tid}, {"content", text(pick(100, 8000))}});
    out += "," + json::serialize(json::object{{"role", "user"}, {"content", results}});
  }
  return out + "]";
}

// The benchmark inputs: 10 MB, and 40 MB for the scaling check.
const std::string& input(int scale = 1) {
  if (scale == 4) {
    static const std::string four = generate_conversation(40u << 20);
    return four;
  }
  static const std::string one = generate_conversation(10u << 20);
  return one;
}

void BM_BoostJsonParseSerialize(benchmark::State& state) {
  const std::string& bytes = input();
  for (auto _ : state) {
    json::value v = json::parse(bytes);
    std::string out = json::serialize(v);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_BoostJsonParseSerialize)->Unit(benchmark::kMillisecond);

void BM_ParseCheckSerialize(benchmark::State& state) {
  using namespace compactor;
  const std::string& bytes = input();
  auto checkers = make_builtin_checkers();
  for (auto _ : state) {
    auto c = read_conversation(bytes);
    if (!c) state.SkipWithError(c.error().message.c_str());
    std::string request = find_active_request(*c).text;
    auto violations = run_checkers(checkers, CheckInput{*c, *c, compute_protected_tail(*c, 1), request});
    if (!violations.empty()) state.SkipWithError(violations.front().to_string().c_str());
    std::string out = c->serialize();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_ParseCheckSerialize)->Unit(benchmark::kMillisecond);

class QuietLogger final : public compactor::StageLogger {
 public:
  void log(compactor::LogLevel, std::string_view) override {}
};

// A whole `compactor run` with the default-style micro stage, as the CLI does it: parse, input
// checks, micro over budget, every checker on its candidate, serialize.
void BM_FullRunMicro(benchmark::State& state) {
  using namespace compactor;
  int scale = static_cast<int>(state.range(0));
  const std::string& bytes = input(scale);
  auto config_path = std::filesystem::temp_directory_path() / "compactor-bench-pipeline.yaml";
  std::ofstream(config_path) << "version: 1\nbudget: {unit: chars, limit: 1000000}\nplugin_dirs: [\"" COMPACTOR_PLUGIN_DIR
                                "\"]\npipeline:\n  - stage: micro\n    when: over_budget\n";
  auto loaded = load_pipeline_config(config_path.string());
  if (!loaded.config) {
    state.SkipWithError(loaded.errors.front().c_str());
    return;
  }
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  QuietLogger log;
  for (auto _ : state) {
    auto c = read_conversation(bytes);
    RunReport report = pipeline->run(*c, {}, log);
    if (report.stages.empty() || report.stages[0].status != StageStatus::committed) state.SkipWithError("micro did not commit");
    std::string out = report.output->serialize();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_FullRunMicro)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_BoostJsonParseSerialize4x(benchmark::State& state) {
  const std::string& bytes = input(4);
  for (auto _ : state) {
    json::value v = json::parse(bytes);
    std::string out = json::serialize(v);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_BoostJsonParseSerialize4x)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
