// `compactor bench` on a fixture corpus whose every number was worked out by hand (each with
// its arithmetic beside it), and the bench's promises: --jobs and --shard/--merge change
// nothing in the output, bad sessions are skipped, bad configs stop everything, and every
// replayed call of the real sessions passes the checkers with nothing lost.
#include "support/test_support.hpp"

#include "bench/replay.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

namespace compactor::test {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

const std::string kBench = COMPACTOR_BENCH_DIR;  // tests/bench
const std::string kFixture = kBench + "/fixture";
const std::string kPrices = kBench + "/prices.yaml";

fs::path scratch_root() { return fs::temp_directory_path() / ("compactor-bench-test-" + std::to_string(::getpid())); }

// Removes this process's scratch folders when the tests are done.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(scratch_root()); }
};
[[maybe_unused]] auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

std::string scratch(const std::string& name) {
  fs::path p = scratch_root() / name;
  fs::remove_all(p);
  fs::create_directories(p.parent_path());
  return p.string();
}

// sessions.jsonl, by "session|config_index".
std::map<std::string, json::object> read_sessions(const std::string& out) {
  std::map<std::string, json::object> lines;
  std::string text = read_file(out + "/sessions.jsonl");
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    json::object o = json::parse(text.substr(start, nl - start)).as_object();
    lines[std::string(o.at("session").as_string()) + "|" + std::to_string(o.at("config_index").to_number<int>())] = o;
    start = nl + 1;
  }
  return lines;
}

std::vector<std::uint64_t> ints(const json::object& line, const char* key) {
  std::vector<std::uint64_t> out;
  for (const auto& v : line.at("per_call").at(key).as_array()) out.push_back(v.to_number<std::uint64_t>());
  return out;
}

std::uint64_t u(const json::object& o, const char* key) { return o.at(key).to_number<std::uint64_t>(); }

using V = std::vector<std::uint64_t>;

// The fixture session notes.json, one message a line; its chars, counted on the file (line
// length less the separating comma) and by hand from the JSON:
//   m0 user prompt "Read the notes file."                            48 chars → chars4 12 tokens (⌈48/4⌉)
//   m1 assistant tool_use Read {file_path:/w/notes.txt}             113 chars → 29 (⌈113/4⌉)
//   m2 user is_error result "E1 notes locked\n" + 4,984 × "x"       5,099 chars → 1,275 (94 framing + 5,001 + 4)
//   m3 assistant tool_use Bash {command:make}                       103 chars → 26
//   m4 user is_error result "make: *** No rule to make target\nline two"  140 chars → 35
//   m5 assistant text "The build has no rule."                        80 chars → 20
//   m6 user "Thanks." (no call follows it)
// Calls happen before m1, m3, m5. Prices (tests/bench/prices.yaml): input 3, cache write 3.75,
// cache read 0.30, output 15 USD per million tokens; minimum cacheable 1,024 tokens.
TEST(BenchFixture, PerCallTokensCacheCostAndRetentionMatchTheHandArithmetic) {
  std::string out = scratch("fixture");
  auto r = run_cli({"bench", "--corpus", kFixture, "--config", kBench + "/configs/plain.yaml", "--config",
                    kBench + "/configs/micro.yaml", "--prices", kPrices, "--meter", "chars4", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = read_sessions(out);
  ASSERT_EQ(lines.size(), 3u);  // broken.json and unpaired.json are skipped; the last is the baseline

  // plain.yaml: nothing compacts.
  const json::object& plain = lines.at("notes.json|0");
  EXPECT_EQ(ints(plain, "messages"), (V{1, 3, 5}));
  EXPECT_EQ(ints(plain, "sent"), (V{12, 1316, 1377}));           // 12; 12+29+1275; 1316+26+35
  EXPECT_EQ(ints(plain, "cached_messages"), (V{0, 1, 3}));        // first call has no previous request
  EXPECT_EQ(ints(plain, "cache_read"), (V{0, 0, 1316}));          // prefix 12 < 1024; prefix 1316 ≥ 1024
  EXPECT_EQ(ints(plain, "cache_write"), (V{0, 1316, 61}));        // 12 < 1024 not cacheable; all; 1377−1316
  EXPECT_EQ(ints(plain, "output"), (V{29, 26, 20}));              // m1, m3, m5
  EXPECT_EQ(u(plain, "tokens_sent"), 2705u);                      // 12+1316+1377
  EXPECT_EQ(u(plain, "uncached"), 12u);
  EXPECT_EQ(u(plain, "compactions"), 0u);
  // (12×3 + 1377×3.75 + 1316×0.30 + 75×15) / 1e6 = (36 + 5163.75 + 394.8 + 1125) / 1e6
  EXPECT_EQ(u(plain, "cost_nusd"), 6719550u);  // nano-USD
  const auto& pr = plain.at("retention").as_object();
  // median call = call 2: probes of m0..m2: the prompt, "Read", "/w/notes.txt", "E1 notes locked"
  EXPECT_EQ(u(pr.at("median").as_object(), "call"), 2u);
  EXPECT_EQ(u(pr.at("median").as_object(), "probes"), 4u);
  EXPECT_EQ(u(pr.at("median").as_object(), "visible"), 4u);
  // last call = call 3: also "Bash" and "make: *** No rule to make target"
  EXPECT_EQ(u(pr.at("last").as_object(), "probes"), 6u);
  EXPECT_EQ(u(pr.at("last").as_object(), "visible"), 6u);
  EXPECT_EQ(u(pr.at("last").as_object(), "recoverable"), 6u);

  // micro.yaml: at call 3 (5,503 chars > 2,000) m2's failed result becomes a 151-char marker
  // that names its tool, its path and its first line ("[compactor archived " 20 + "error of Read
  // /w/notes.txt: \"E1 notes locked\"" 45 + ", 5000 chars: " 14 + <71> + "]" 1), the only (so
  // oldest) one, which also says how to restore (" An archived result is not an execution
  // result; `compactor restore <71>` gives it back, and so for every such marker." = 67+71+46 =
  // 184); m2' is 94 + 151 + 184 + 4 = 433 chars → 109 tokens.
  const json::object& micro = lines.at("notes.json|1");
  EXPECT_EQ(ints(micro, "sent"), (V{12, 1316, 211}));             // 12+29+109+26+35
  EXPECT_EQ(ints(micro, "cached_messages"), (V{0, 1, 2}));        // m2 changed: the prefix ends at m1
  EXPECT_EQ(ints(micro, "cache_read"), (V{0, 0, 0}));             // 12+29 = 41 < 1024
  EXPECT_EQ(ints(micro, "cache_write"), (V{0, 1316, 0}));         // 201 < 1024: not cacheable
  EXPECT_EQ(u(micro, "uncached"), 223u);                          // 12 + 211
  EXPECT_EQ(u(micro, "compactions"), 1u);
  EXPECT_EQ(u(micro, "over_budget"), 0u);
  EXPECT_EQ(u(micro, "over_budget_tail"), 1u);  // call 2: 5,260 chars > 2,000, all of it the protected newest exchange
  EXPECT_EQ(micro.at("per_call").at("stages").as_array().at(2).as_string(), "micro:committed");
  EXPECT_EQ(micro.at("per_call").at("stages").as_array().at(1).as_string(), "micro:unchanged");  // 1 result ≤ keep_recent
  // (223×3 + 1316×3.75 + 0 + 75×15) / 1e6 = (669 + 4935 + 1125) / 1e6
  EXPECT_EQ(u(micro, "cost_nusd"), 6729000u);
  const json::object& split = micro.at("cost_split_nusd").as_object();
  EXPECT_EQ(u(split, "uncached"), 669000u);
  EXPECT_EQ(u(split, "cache_write"), 4935000u);
  EXPECT_EQ(u(split, "cache_read"), 0u);
  EXPECT_EQ(u(split, "output"), 1125000u);
  const auto& mr = micro.at("retention").as_object().at("last").as_object();
  EXPECT_EQ(u(mr, "probes"), 6u);
  EXPECT_EQ(u(mr, "visible"), 6u);      // "E1 notes locked" is in the marker of its failed result
  EXPECT_EQ(u(mr, "recoverable"), 6u);

  // The baseline: the whole history every call, which plain.yaml also sends.
  const json::object& base = lines.at("notes.json|2");
  EXPECT_EQ(base.at("config").as_string(), "uncompacted");
  EXPECT_EQ(ints(base, "sent"), ints(plain, "sent"));
  EXPECT_EQ(u(base, "cost_nusd"), 6719550u);
  // micro.yaml paid 6,729,000 − 6,719,550 nano-USD more than sending everything: the table says so.
  EXPECT_NE(r.out.find("- notes.json (micro): $0.0067 vs $0.0067 uncompacted (+0.1%)\n"), std::string::npos)
      << r.out;
}

// A Claude Code log whose third answer comes `gap_s` after the second (the first 5 s after the
// prompt): three calls, the second's request 1,300-odd tokens (a 5,000-char result), over the
// minimum cacheable 1,024.
std::string timed_session(int gap_s) {
  auto at = [](int t) {
    const int s = t + 600;  // from 10:10, so that a negative gap is a time too
    return "2026-01-05T10:" + std::string(s / 60 < 10 ? "0" : "") + std::to_string(s / 60) + ":" +
                               (s % 60 < 10 ? "0" : "") + std::to_string(s % 60) + ".000Z";
  };
  auto line = [](const std::string& type, int n, const std::string& time, const std::string& message) {
    return "{\"type\":\"" + type + "\",\"uuid\":\"u" + std::to_string(n) + "\",\"parentUuid\":" +
           (n == 1 ? std::string("null") : "\"u" + std::to_string(n - 1) + "\"") + ",\"sessionId\":\"s\",\"isSidechain\":false,\"timestamp\":\"" +
           time + "\",\"message\":" + message + "}\n";
  };
  auto answer = [](const std::string& id, const std::string& content) {
    return "{\"id\":\"" + id + "\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":" + content +
           ",\"usage\":{\"input_tokens\":10,\"output_tokens\":20}}";
  };
  return line("user", 1, at(0), R"({"role":"user","content":"Read the notes file."})") +
         line("assistant", 2, at(5), answer("m1", R"([{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/w/notes.txt"}}])")) +
         line("user", 3, at(6), R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":")" + std::string(5000, 'x') + "\"}]}") +
         line("assistant", 4, at(10), answer("m2", R"([{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"make"}}])")) +
         line("user", 5, at(11), R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]})") +
         line("assistant", 6, at(10 + gap_s), answer("m3", R"([{"type":"text","text":"Done."}])"));
}

// The log's times are the replay's: a call 10 minutes after the one before finds the 5-minute
// cache cold (it reads nothing and writes its whole request); one a minute after reads the
// previous request's prefix; a clock that ran backwards (the third answer timed before the
// second) is taken as no gap.
TEST(BenchIdle, ACallAfterTheCachesLifetimeFindsItCold) {
  for (const auto& [gap, cold] : {std::pair{600, true}, std::pair{60, false}, std::pair{-100, false}}) {
    const std::string corpus = scratch("idle-corpus-" + std::to_string(gap)), out = scratch("idle-out-" + std::to_string(gap));
    fs::create_directories(corpus);
    std::ofstream(corpus + "/s.jsonl") << timed_session(gap);
    auto r = run_cli({"bench", "--corpus", corpus, "--config", kBench + "/configs/plain.yaml", "--prices", kPrices, "--meter", "chars4",
                      "--out", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto sessions = read_sessions(out);
    ASSERT_TRUE(sessions.count("s.jsonl|1")) << r.out << r.err;
    const json::object& base = sessions.at("s.jsonl|1");
    const V sent = ints(base, "sent"), read = ints(base, "cache_read"), write = ints(base, "cache_write");
    ASSERT_EQ(sent.size(), 3u);
    ASSERT_GE(sent[1], 1024u);
    EXPECT_EQ(read[1], 0u) << gap;  // the first request was under the minimum cacheable length
    EXPECT_EQ(write[1], sent[1]) << gap;
    if (cold) {
      EXPECT_EQ(read[2], 0u) << gap;
      EXPECT_EQ(write[2], sent[2]) << gap;
    } else {
      EXPECT_EQ(read[2], sent[1]) << gap;  // the whole second request is the third's prefix
      EXPECT_EQ(write[2], sent[2] - sent[1]) << gap;
    }
  }
}

// --window 1000: call 2 (1,316) is refused and on_prompt_too_long's micro cannot act (one result,
// keep_recent 1), so it stays over; call 3 (1,377) is refused and micro makes it 211.
TEST(BenchFixture, ARequestOverTheWindowIsRefusedAndCompactedReactivelyOnce) {
  std::string out = scratch("window");
  auto r = run_cli({"bench", "--corpus", kFixture, "--config", kBench + "/configs/plain.yaml", "--prices", kPrices,
                    "--meter", "chars4", "--window", "1000", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = read_sessions(out);
  const json::object& line = lines.at("notes.json|0");
  EXPECT_EQ(u(line, "refusals"), 2u);
  EXPECT_EQ(u(line, "over_window"), 1u);
  EXPECT_EQ(ints(line, "sent"), (V{12, 1316, 211}));
  std::vector<bool> refused;
  for (const auto& v : line.at("per_call").at("refused").as_array()) refused.push_back(v.as_bool());
  EXPECT_EQ(refused, (std::vector<bool>{false, true, true}));
}

TEST(BenchFixture, BrokenSessionsAreReportedAndSkipped) {
  std::string out = scratch("skipped");
  auto r = run_cli({"bench", "--corpus", kFixture, "--config", kBench + "/configs/plain.yaml", "--prices", kPrices,
                    "--meter", "chars4", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("skipped broken.json: "), std::string::npos) << r.err;
  EXPECT_NE(read_file(out + "/skipped.jsonl").find("\"session\":\"broken.json\""), std::string::npos);
  // unpaired.json parses, but the API would refuse it: its tool_use has no result.
  EXPECT_NE(r.err.find("skipped unpaired.json: pairing: messages.1: tool_use ids were found without tool_result blocks "
                       "immediately after: t1\n"),
            std::string::npos)
      << r.err;
}

// Calls a pipeline leaves over its budget are a figure of the config, in the verdict and the
// table, not a failure of the bench: exit 0 (docs/bench.md, "Running it"). With no stage and a
// 1,000-char limit, notes.json's call 2 (5,260 chars, 5,212 of them the protected newest
// exchange) is over with its tail alone over, call 3 (5,503 chars, its newest exchange 243) over.
TEST(BenchFixture, CallsLeftOverBudgetAreAFigureAndTheBenchExitsZero) {
  std::string dir = scratch("over-budget");
  fs::create_directories(dir);
  const std::string config = dir + "/tight.yaml";
  std::ofstream(config) << "version: 1\nbudget: {unit: chars, limit: 1000}\narchive: {dir: .compactor/archive}\npipeline: []\n";
  auto r = run_cli({"bench", "--corpus", kFixture, "--config", config, "--prices", kPrices, "--meter", "chars4", "--out", dir + "/out"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("- tight: 1 call left over its budget and 1 call whose protected tail alone is over it.\n"), std::string::npos) << r.out;
  const auto lines = read_sessions(dir + "/out");
  EXPECT_EQ(u(lines.at("notes.json|0"), "over_budget"), 1u);
  EXPECT_EQ(u(lines.at("notes.json|0"), "over_budget_tail"), 1u);
}

// The bench reads every body `run` reads: a Responses request body is replayed with that API's
// rules (before, it was skipped: 'request body has no "messages"'); a body breaking one of its
// rules is skipped with that rule, as `run` refuses it.
TEST(BenchFixture, ResponsesBodiesAreReplayedAndThoseBreakingARuleSkippedWithIt) {
  std::string out = scratch("responses");
  auto r = run_cli({"bench", "--corpus", std::string(COMPACTOR_TEST_DATA_DIR) + "/responses", "--config",
                    std::string(COMPACTOR_CONFIGS_DIR) + "/demo-50k-chars.yaml", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = read_sessions(out);
  ASSERT_EQ(lines.count("valid.json|0"), 1u) << r.err;
  EXPECT_EQ(lines.at("valid.json|0").at("source").as_string(), "responses");
  EXPECT_EQ(lines.at("valid.json|0").at("model").as_string(), "gpt-5.1-codex");
  EXPECT_EQ(lines.at("valid.json|0").at("meter").as_string(), "o200k");
  EXPECT_EQ(u(lines.at("valid.json|0"), "calls"), 3u);  // one before each of its 3 assistant messages
  EXPECT_EQ(u(lines.at("valid.json|0"), "failures"), 0u);
  EXPECT_EQ(r.err.find("no \"messages\""), std::string::npos) << r.err;
  for (const char* rule : {"call_without_output.json: pairing: ", "duplicate_call_id.json: unique_call_ids: ",
                                  "duplicate_item_id.json: unique_item_ids: ", "instruction_inside_a_tool_pair.json: ",
                                  "output_without_call.json: pairing: ", "reasoning_without_following_item.json: reasoning_followed: "})
    EXPECT_NE(r.err.find(std::string("compactor bench: skipped ") + rule), std::string::npos) << rule << "\n" << r.err;
  EXPECT_NE(r.err.find("instruction_inside_a_tool_pair.json: input.4: an instruction or context item inside a tool pair"), std::string::npos)
      << r.err;
}

TEST(BenchFixture, AConfigThatFailsValidationStopsTheBenchBeforeAnythingRuns) {
  std::string dir = scratch("badconfig");
  fs::create_directories(dir);
  std::string config = dir + "/bad.yaml";
  std::ofstream(config) << "version: 1\nbudget: {unit: chars, limit: ten}\npipeline: []\n";
  auto r = run_cli({"bench", "--corpus", kFixture, "--config", kBench + "/configs/plain.yaml", "--config", config,
                    "--prices", kPrices, "--out", dir + "/out"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(config + ":2:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

TEST(BenchFixture, MisuseIsABadInputExitWithTheReason) {
  const std::string plain = kBench + "/configs/plain.yaml";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const auto& c : std::vector<Case>{
           {{"--shard", "2/2"}, "--shard takes I/N with 0 <= I < N, got \"2/2\""},
           {{"--jobs", "0"}, "--jobs takes a number from 1 to 256, got \"0\""},
           {{"--window", "x"}, "--window takes a positive number of tokens or auto, got \"x\""},
           {{"--meter", "words"}, "--meter takes chars4, cl100k, o200k, claude-legacy or calibrated, got \"words\""}}) {
    std::vector<std::string> args{"bench", "--corpus", kFixture, "--config", plain, "--prices", kPrices};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("compactor bench: " + c.message + "\n"), std::string::npos) << r.err;
  }
  auto r = run_cli({"bench", "--merge", kFixture});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("compactor bench: --merge needs --out"), std::string::npos) << r.err;
  auto p = run_cli({"bench", "--corpus", kFixture, "--config", plain, "--prices", kBench + "/nowhere.yaml"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("compactor bench: " + kBench + "/nowhere.yaml"), std::string::npos) << p.err;
  // An --out that cannot be a folder is found before anything is replayed.
  auto o = run_cli({"bench", "--corpus", kFixture, "--config", plain, "--prices", kPrices, "--out", plain});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("compactor bench: " + plain + ": --out: cannot create the folder"), std::string::npos) << o.err;
  EXPECT_EQ(o.out, "") << "nothing was replayed";
}

// The same shard given twice to --merge would count its sessions twice: refused.
TEST(BenchScale, MergingAFolderTwiceIsRefused) {
  test::ScratchFolder folder("bench-merge-twice");
  const fs::path& dir = folder.path();
  auto whole = run_cli({"bench", "--corpus", kFixture, "--config", kBench + "/configs/plain.yaml", "--prices", kPrices, "--meter", "chars4", "--out",
                        (dir / "whole").string()});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto r = run_cli({"bench", "--merge", (dir / "whole").string(), "--merge", (dir / "whole").string(), "--out", (dir / "m").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is already in an earlier --merge folder; each session once"), std::string::npos) << r.err;
}

// The prompt cache compares whole messages as serialized; a moved cache_control marker is not a
// change, any other byte is.
TEST(BenchCache, TheSharedPrefixIgnoresCacheControlMarkersOnly) {
  auto a = parse_or_die(R"([{"role":"user","content":[{"type":"text","text":"one","cache_control":{"type":"ephemeral"}}]},
    {"role":"assistant","content":"two"},{"role":"user","content":"three"}])");
  auto b = parse_or_die(R"([{"role":"user","content":[{"type":"text","text":"one"}]},
    {"role":"assistant","content":"two"},{"role":"user","content":"three!"}])");
  EXPECT_EQ(bench::shared_prefix(a, b), 2u);  // m0 differs only by the marker; m2 by a byte
  EXPECT_EQ(bench::shared_prefix(a, a), 3u);
  EXPECT_EQ(bench::shared_prefix(b, a.with_messages({})), 0u);
}

TEST(BenchProbes, ProbesArePathsErrorFirstLinesPromptsAndToolNames) {
  auto c = parse_or_die(R"([{"role":"user","content":"fix it"},
    {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Edit","input":{"file_path":"/x/y.py","old_string":"p"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"a","is_error":true,"content":[{"type":"text","text":"\n  boom here  \nrest"}]},
                              {"type":"text","text":"and then?"}]}])");
  EXPECT_EQ(bench::retention_probes(c, 3), (std::vector<std::string>{"/x/y.py", "Edit", "and then?", "boom here", "fix it"}));
  EXPECT_EQ(bench::retention_probes(c, 1), (std::vector<std::string>{"fix it"}));
}

// The test tool that writes seeded sessions for the scale test and the benchmarks.
CommandResult generate_session(const std::vector<std::string>& args) { return run_program(COMPACTOR_GENERATE_SESSION, args); }

TEST(BenchGenerate, TheSameSeedGivesTheSameBytesAndAValidSession) {
  auto a = generate_session({"--exchanges", "60", "--seed", "7"});
  auto b = generate_session({"--exchanges=60", "--seed=7"});
  auto c = generate_session({"--exchanges", "60", "--seed", "8"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  auto check = run_cli({"check", "--input", "-"}, a.out);
  EXPECT_EQ(check.exit_code, 0) << check.err;
  for (const char* needle : {"\"type\":\"thinking\"", "\"is_error\":true", "\"name\":\"Read\"", "\"name\":\"Edit\""})
    EXPECT_NE(a.out.find(needle), std::string::npos) << needle;
  const std::string file = scratch("generated-session.json");
  ASSERT_EQ(generate_session({"--exchanges", "60", "--seed", "7", "--output", file}).exit_code, 0);
  EXPECT_EQ(read_file(file), a.out);
}

TEST(BenchGenerate, BadArgumentsAreRefusedWithTheirReason) {
  auto zero = generate_session({"--exchanges", "0", "--seed", "1"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err.substr(0, zero.err.find('\n')),
            "compactor_generate_session: --exchanges takes a number from 1 to 1000000, got \"0\"");
  auto no_seed = generate_session({"--exchanges", "3"});
  EXPECT_EQ(no_seed.exit_code, 2);
  EXPECT_EQ(no_seed.err.substr(0, no_seed.err.find('\n')), "compactor_generate_session: --seed is required");
  auto unknown = generate_session({"--exchanges", "3", "--seed", "1", "--size", "9"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err.substr(0, unknown.err.find('\n')), "compactor_generate_session: unknown option --size");
  EXPECT_TRUE(zero.out.empty() && no_seed.out.empty() && unknown.out.empty());
}

// The deterministic files of an --out folder (timings.jsonl holds the wall times).
std::map<std::string, std::string> deterministic_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != "timings.jsonl") files[e.path().filename().string()] = read_file(e.path().string());
  return files;
}

const std::vector<std::string> kReadyConfigs = {COMPACTOR_CONFIGS_DIR "/demo-50k-chars.yaml", COMPACTOR_CONFIGS_DIR "/default.yaml"};

std::vector<std::string> bench_args(const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args{"bench", "--corpus", COMPACTOR_TEST_DATA_DIR, "--out", out};
  for (const auto& c : kReadyConfigs) args.insert(args.end(), {"--config", c});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(BenchScale, JobsTwoWritesTheSameBytesAsJobsOne) {
  std::string one = scratch("jobs1"), two = scratch("jobs2");
  auto a = run_cli(bench_args(one, {"--jobs", "1"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = run_cli(bench_args(two, {"--jobs", "2"}));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto fa = deterministic_files(one), fb = deterministic_files(two);
  EXPECT_EQ(fa.size(), fb.size());
  for (const auto& [name, bytes] : fa) EXPECT_TRUE(fb.count(name) && fb.at(name) == bytes) << name << " differs";
  EXPECT_TRUE(fs::exists(two + "/timings.jsonl"));
}

TEST(BenchScale, TwoShardsMergedEqualTheWholeRun) {
  std::string whole = scratch("whole"), s0 = scratch("shard0"), s1 = scratch("shard1"), merged = scratch("merged");
  auto w = run_cli(bench_args(whole, {}));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(run_cli(bench_args(s0, {"--shard", "0/2"})).exit_code, 0);
  ASSERT_EQ(run_cli(bench_args(s1, {"--shard", "1/2"})).exit_code, 0);
  EXPECT_NE(read_file(s0 + "/sessions.jsonl"), read_file(whole + "/sessions.jsonl"));  // a shard is a part
  auto m = run_cli({"bench", "--merge", s0, "--merge", s1, "--out", merged});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto fw = deterministic_files(whole), fm = deterministic_files(merged);
  EXPECT_EQ(fw.size(), fm.size());
  for (const auto& [name, bytes] : fw) EXPECT_TRUE(fm.count(name) && fm.at(name) == bytes) << name << " differs";
  // The table is made from the same lines; only its pipeline-time columns may differ.
  auto rows = [](const std::string& table) {
    std::string out;
    for (std::size_t s = 0, nl; s < table.size(); s = nl + 1) {
      nl = table.find('\n', s);
      std::string row = table.substr(s, nl - s);
      for (int k = 0; k < 2; ++k) row = row.substr(0, row.rfind('|', row.size() - 2) + 1);  // drop p50, p99
      out += row + "\n";
    }
    return out;
  };
  EXPECT_EQ(rows(m.out), rows(w.out));
}

// Every call of every real session, every ready config: the checkers accept every input and
// every candidate (exit 0 means no failure, no rejection, no probe lost) and every probe is
// recoverable.
TEST(BenchReal, EveryReplayedCallPassesTheCheckersAndNothingIsLost) {
  std::string out = scratch("real");
  std::vector<std::string> args{"bench", "--corpus", COMPACTOR_TEST_DATA_DIR, "--out", out, "--jobs", "2"};
  for (const char* c : {"default.yaml", "demo-50k-chars.yaml", "careful.yaml", "masking-only.yaml", "tokens.yaml"})
    args.insert(args.end(), {"--config", std::string(COMPACTOR_CONFIGS_DIR) + "/" + c});
  auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = read_sessions(out);
  EXPECT_GE(lines.size(), 6u * 8u);  // five configs and the baseline
  for (const auto& [key, line] : lines) {
    EXPECT_EQ(u(line, "failures"), 0u) << key;
    EXPECT_EQ(u(line, "rejections"), 0u) << key;
    for (const char* which : {"median", "last"}) {
      const auto& ret = line.at("retention").at(which).as_object();
      EXPECT_EQ(u(ret, "recoverable"), u(ret, "probes")) << key << " " << which;
    }
  }
}

// Gemini CLI chats (one recorded offline, one hand-made in the older layout) replay with no
// failed call, each priced from its model's Gemini entry of the shipped table: gemini-3.8-flash
// as gemini-3-flash (0.50 input and cache write, 0.05 cache read, 3.00 output per million),
// gemini-2.5-pro as itself (1.25, 1.25, 0.125, 10.00).
TEST(BenchGemini, GeminiCliChatsReplayWithNoFailedCallPricedFromTheirModels) {
  std::string out = scratch("gemini");
  auto r = run_cli({"bench", "--corpus", std::string(COMPACTOR_TEST_DATA_DIR) + "/gemini-cli", "--config",
                    std::string(COMPACTOR_CONFIGS_DIR) + "/default.yaml", "--meter", "chars4", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = read_sessions(out);
  ASSERT_EQ(lines.size(), 4u);  // each chat through the default and uncompacted
  const std::map<std::string, std::vector<double>> prices = {{"gemini-3.8-flash", {0.50, 0.50, 0.05, 3.00}},
                                                             {"gemini-2.5-pro", {1.25, 1.25, 0.125, 10.00}}};
  for (const auto& [key, line] : lines) {
    EXPECT_EQ(u(line, "failures"), 0u) << key;
    EXPECT_EQ(u(line, "rejections"), 0u) << key;
    EXPECT_GT(u(line, "calls"), 0u) << key;
    const std::string model(line.at("model").as_string());
    ASSERT_TRUE(prices.count(model)) << key << " " << model;
    const auto& p = prices.at(model);
    const double cost = (static_cast<double>(u(line, "uncached")) * p[0] + static_cast<double>(u(line, "cache_write")) * p[1] +
                         static_cast<double>(u(line, "cache_read")) * p[2] + static_cast<double>(u(line, "output")) * p[3]) * 1000;
    EXPECT_NEAR(static_cast<double>(u(line, "cost_nusd")), cost, 2.0) << key;  // four parts, each rounded
  }
}

}  // namespace
}  // namespace compactor::test
