// compactor bench --sweep: a grid over a base config, each point a config of the run, and the
// frontier of cost with re-fetch against evidence, worked out by hand on the two small sessions
// of tests/bench/evidence (their figures are in evidence_test.cpp).
#include "support/test_support.hpp"

#include "bench/frontier.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace compactor::test {
namespace {

namespace fs = std::filesystem;

const std::string kBench = COMPACTOR_BENCH_DIR;  // tests/bench

bench::FrontierPoint point(std::uint64_t cost_nusd, double evidence) {
  bench::FrontierPoint p;
  p.cost_nusd = cost_nusd;
  p.evidence = evidence;
  return p;
}

TEST(BenchFrontier, APointIsDominatedByOneNoDearerWithNoLessEvidenceOneStrictly) {
  const std::vector<bench::FrontierPoint> points = {point(100, 90), point(80, 95), point(80, 95), point(60, 50), point(120, 100)};
  EXPECT_TRUE(bench::dominates(points[1], points[0]));   // cheaper and more
  EXPECT_FALSE(bench::dominates(points[1], points[2]));  // equal: neither
  EXPECT_FALSE(bench::dominates(points[3], points[1]));  // cheaper, less
  EXPECT_EQ(bench::frontier(points), (std::vector<std::size_t>{3, 1, 2, 4}));  // cheapest first; 0 alone is dominated
}

std::string write_sweep(const fs::path& dir, const std::string& text) {
  const std::string file = (dir / "s.yaml").string();
  std::ofstream(file) << text;
  return file;
}

std::vector<std::string> sweep_args(const std::string& sweep, const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"bench", "--corpus", kBench + "/evidence", "--sweep", sweep, "--prices", kBench + "/prices.yaml",
                                "--meter", "chars4", "--out", out};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// micro.yaml with keep_recent 1 masks the Read both sessions quote at call 3 (as micro.yaml does):
// 6,501,000 + 3,219,900 + 5,166,000 + 3,219,900 = 18,106,800 nano-USD with re-fetch against
// uncompacted's 10,041,000 + 6,936,000 = 16,977,000: 1.067x, none of the 2 probes visible. With
// keep_recent 5 nothing is masked: uncompacted's cost and evidence, so it and uncompacted tie on
// the frontier and both dominate point 1. keep_recent -1 is refused by micro's schema: skipped.
// Both sessions pass 100 tokens (their largest requests: 920 and 798).
TEST(BenchSweep, AGridOfPointsGivesTheFrontierAndWhatDominatesWhat) {
  ScratchFolder folder("bench-sweep");
  const std::string sweep = write_sweep(folder.path(), "base: " + kBench + "/configs/micro.yaml\n"
                                                       "grid:\n  micro.keep_recent: [1, 5, -1]\nlong_sessions: 100\n");
  const std::string out = (folder.path() / "out").string();
  auto r = run_cli(sweep_args(sweep, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("compactor bench: skipped s #3: micro.keep_recent=-1: "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("| s #1: micro.keep_recent=1 | 1.067x | 0.0% | 2 | no | s #2 and uncompacted |\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| s #2: micro.keep_recent=5 | 1.000x | 100.0% | 2 | yes | — |\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| uncompacted | 1.000x | 100.0% | 2 | yes | — |\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Over the 2 sessions whose uncompacted history passes 100 tokens:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| s #1: micro.keep_recent=1 | 1.067x | 0.0% | 2 | no | no | s #2 and uncompacted |\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Cost ≤ 0.5x with evidence ≥ 97% on those sessions: none\n"), std::string::npos) << r.out;
  // The points are kept as configs, and the frontier drawn.
  EXPECT_NE(read_file(out + "/sweep/point-2.yaml").find("keep_recent: 5"), std::string::npos);
  EXPECT_NE(read_file(out + "/frontier-long.svg").find("s #2"), std::string::npos);
}

TEST(BenchSweep, ShardsOfASweepMergeIntoTheSameFrontier) {
  ScratchFolder folder("bench-sweep-shards");
  const std::string sweep = write_sweep(folder.path(), "base: " + kBench + "/configs/micro.yaml\n"
                                                       "grid:\n  micro.keep_recent: [1, 5]\nlong_sessions: 100\n");
  const auto dir = [&](const char* name) { return (folder.path() / name).string(); };
  auto whole = run_cli(sweep_args(sweep, dir("whole")));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(run_cli(sweep_args(sweep, dir("s0"), {"--shard", "0/2"})).exit_code, 0);
  ASSERT_EQ(run_cli(sweep_args(sweep, dir("s1"), {"--shard", "1/2"})).exit_code, 0);
  auto merged = run_cli({"bench", "--merge", dir("s0"), "--merge", dir("s1"), "--out", dir("merged")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const auto section = [](const std::string& out) { return out.substr(out.find("\nSweep: ")); };
  EXPECT_EQ(section(merged.out), section(whole.out));
  EXPECT_EQ(read_file(dir("merged") + "/frontier.svg"), read_file(dir("whole") + "/frontier.svg"));
}

TEST(BenchSweep, ABadSweepFileIsALocatedErrorAndNothingRuns) {
  ScratchFolder folder("bench-sweep-bad");
  const std::string base = "base: " + kBench + "/configs/micro.yaml\n";
  struct Case {
    std::string text, message;
  };
  for (const auto& c : std::vector<Case>{
           {base + "grid:\n  micro.keep_recent: [1]\ncolour: red\n", ":4:1: colour: unknown key (base, grid, orderings, configs, long_sessions)"},
           {base + "grid:\n  snip.max_messages: [10]\n", ":3:22: grid.snip.max_messages: no stage or section snip in the base config"},
           {base + "grid:\n  micro.keep_recent: []\n", ":3:22: grid.micro.keep_recent: expected a non-empty list of values"},
           {"grid:\n  micro.keep_recent: [1]\n", ": base: the config the points start from is required"}}) {
    const std::string sweep = write_sweep(folder.path(), c.text);
    auto r = run_cli(sweep_args(sweep, (folder.path() / "out").string()));
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_NE(r.err.find("compactor bench: " + sweep + c.message + "\n"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing was replayed";
  }
}

}  // namespace
}  // namespace compactor::test
