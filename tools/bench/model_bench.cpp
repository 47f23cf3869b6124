// parse → check → serialize of a ≥ 10 MB generated conversation, against plain Boost.JSON
// parse + serialize of the same bytes, in the same binary. Reports bytes/s.
#include "model/active_request.hpp"
#include "loader/builtin_checkers.hpp"
#include "host/child_run.hpp"
#include "model/conversation_reader.hpp"
#include "host/pipeline.hpp"

#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <unistd.h>

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
    auto requests = find_active_request(*c).texts;
    auto violations = run_checkers(checkers, CheckInput{*c, *c, compute_protected_tail(*c, 1), requests});
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

// A pipeline of `stages` archiving into `archive`, loaded like the CLI loads it.
std::optional<compactor::Pipeline> make_pipeline(const std::filesystem::path& dir, const std::string& archive,
                                                 const std::string& stages) {
  using namespace compactor;
  auto config_path = dir / "pipeline.yaml";
  std::ofstream(config_path) << "version: 1\nbudget: {unit: chars, limit: 1000000}\narchive: {dir: \"" + archive +
                                    "\"}\nplugin_dirs: [\"" COMPACTOR_PLUGIN_DIR "\"]\npipeline:\n" + stages;
  auto loaded = load_pipeline_config(config_path.string());
  if (!loaded.config) return std::nullopt;
  auto pipeline = Pipeline::build(std::move(*loaded.config));
  if (!pipeline) return std::nullopt;
  return std::move(pipeline).value();
}

// A whole `compactor run` as the CLI does it: parse, input checks, the stages, every checker on
// each candidate, the archive's writes and syncs, serialize. Each iteration archives into a new
// folder, so every blob is really written (the folders are removed only at the end: removing
// thousands of files between iterations slows ext4's next creations and would measure that).
// With `in_child`, the run and the serialization happen in a forked child as `compactor run` does
// them (host/child_run.hpp): the difference to the same benchmark without is the isolation's
// cost per run.
void run_pipeline_benchmark(benchmark::State& state, const std::string& stages, int scale, bool in_child = false) {
  using namespace compactor;
  const std::string& bytes = input(scale);
  auto dir = std::filesystem::temp_directory_path() / ("compactor-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  QuietLogger log;
  int iteration = 0;
  std::size_t blobs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto archive = dir / ("archive-" + std::to_string(iteration++));
    auto pipeline = make_pipeline(dir, archive.string(), stages);
    if (!pipeline) {
      state.SkipWithError("the benchmark pipeline does not load");
      break;
    }
    state.ResumeTiming();
    auto c = read_conversation(bytes);
    auto run = [&](compactor::ChildProgress*) {
      RunReport report = pipeline->run(*c, {}, log);
      if (!report.output) return 3;
      std::string out = report.output->serialize();
      benchmark::DoNotOptimize(out.data());
      return 0;
    };
    int code = in_child ? run_in_child([&](ChildProgress& p) { return run(&p); }, std::chrono::minutes(10), archive.string()).exit_code
                        : run(nullptr);
    if (code != 0) state.SkipWithError("the run failed");
    state.PauseTiming();
    blobs = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(archive); it != std::filesystem::recursive_directory_iterator(); ++it)
      blobs += it->is_regular_file();
    state.ResumeTiming();
  }
  state.counters["blobs"] = static_cast<double>(blobs);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
  std::filesystem::remove_all(dir);
}

void BM_FullRunMicro(benchmark::State& state) {
  run_pipeline_benchmark(state, "  - stage: micro\n    when: over_budget\n", static_cast<int>(state.range(0)));
}
BENCHMARK(BM_FullRunMicro)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_FullRunMicroInChild(benchmark::State& state) {
  run_pipeline_benchmark(state, "  - stage: micro\n    when: over_budget\n", static_cast<int>(state.range(0)), true);
}
BENCHMARK(BM_FullRunMicroInChild)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

// The default pipeline's recoverable steps: budget_persist, snip, micro.
void BM_FullRunDefault(benchmark::State& state) {
  run_pipeline_benchmark(state, "  - stage: budget_persist\n  - stage: snip\n  - stage: micro\n    when: over_budget\n", 1);
}
BENCHMARK(BM_FullRunDefault)->Unit(benchmark::kMillisecond);

// The isolation's fixed cost alone: fork, a child that does nothing, wait; the parent holding a
// parsed 10 MB (or 40 MB) conversation, as `compactor run` does when it forks.
void BM_ChildRunNoop(benchmark::State& state) {
  auto c = compactor::read_conversation(input(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    auto outcome = compactor::run_in_child([](compactor::ChildProgress&) { return 0; }, std::chrono::minutes(1), "");
    if (outcome.exit_code != 0) state.SkipWithError("the child failed");
  }
  benchmark::DoNotOptimize(c);
}
BENCHMARK(BM_ChildRunNoop)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

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
