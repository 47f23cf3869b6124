// The evidence the agent used (bench/evidence.hpp): which lines are probes, when one is visible,
// and the re-fetch charge for a missed one, each figure worked out by hand beside it; then the
// same through `compactor bench` on two small sessions (tests/bench/evidence).
#include "support/test_support.hpp"

#include "bench/evidence.hpp"
#include "bench/replay.hpp"
#include "meter/meter_kinds.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <unistd.h>

namespace compactor::test {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using Lines = std::vector<std::string>;

TEST(BenchEvidence, ActionLinesAreTrimmedLongLinesAndAPatchLosesItsPrefixesAndHeaders) {
  // CRLF: the CR is a blank like any other; "short" is under 30 bytes.
  EXPECT_EQ(bench::action_lines("  first line that is long enough to count\r\nshort\n\tsecond line, tab-indented, long enough  "),
            (Lines{"first line that is long enough to count", "second line, tab-indented, long enough"}));
  // Codex's apply_patch: headers out, one '-', '+' or ' ' cut, then trimmed.
  EXPECT_EQ(bench::action_lines("*** Begin Patch\n*** Update File: src/app.py\n@@ def greet(name):\n"
                                "-    return 'Hello, ' + name + '!!'\n+    return 'Hello, ' + name + '!'  # one bang only\n"
                                "     # greet says hello to whoever calls it\n*** End Patch"),
            (Lines{"return 'Hello, ' + name + '!!'", "return 'Hello, ' + name + '!'  # one bang only",
                   "# greet says hello to whoever calls it"}));
  // A unified diff the same; outside a patch a leading '-' is text (a Markdown list item).
  EXPECT_EQ(bench::action_lines("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print('greeting sent to', name, flush=True)"),
            (Lines{"print('greeting sent to', name, flush=True)"}));
  EXPECT_EQ(bench::action_lines("- a list item in a Markdown file, long enough"), (Lines{"- a list item in a Markdown file, long enough"}));
}

// m0 user: the prompt quotes the comment line (the user's words).
// m1 assistant: text quoting the log line (the agent's words), Read r1 and Grep g1 in parallel.
// m2 user: r1's result (cat -n, CRLF) holds lines 2-6; g1's (two lines, 100 chars) lines 4 and 5.
// m3 assistant: thinking that holds line 6 alone, Edit e1 whose old_string (CRLF) is lines 2-5.
// m4 user: e1's result names a grep command with quotes.
// m5 assistant: a call whose input is JSON text (an OpenAI call's arguments), the quotes escaped.
// m6 user: its result.
// Calls come before m1, m3 and m5 (0, 1, 2).
constexpr const char* kSession = R"json([
{"role":"user","content":"Fix greet in /w/app.py. Keep the comment:\n# greet says hello to whoever calls it"},
{"role":"assistant","content":[{"type":"text","text":"The log line log.info('greet called for %s', name) stays."},
  {"type":"tool_use","id":"r1","name":"Read","input":{"file_path":"/w/app.py"}},
  {"type":"tool_use","id":"g1","name":"Grep","input":{"pattern":"return","path":"/w"}}]},
{"role":"user","content":[
  {"type":"tool_result","tool_use_id":"r1","content":"     1\tdef greet(name):\r\n     2\t    # greet says hello to whoever calls it\r\n     3\t    log.info('greet called for %s', name)\r\n     4\t    return 'Hello, ' + name + '!!'\r\n     5\t    print('greeting sent to', name, flush=True)\r\n     6\t    return_code = notify_all(name, retries=3)\r\n"},
  {"type":"tool_result","tool_use_id":"g1","content":"app.py:4:    return 'Hello, ' + name + '!!'\napp.py:5:    print('greeting sent to', name, flush=True)"}]},
{"role":"assistant","content":[{"type":"thinking","thinking":"Line 6 stays:\n    return_code = notify_all(name, retries=3)","signature":"sig"},
  {"type":"tool_use","id":"e1","name":"Edit","input":{"file_path":"/w/app.py",
   "old_string":"    # greet says hello to whoever calls it\r\n    log.info('greet called for %s', name)\r\n    return 'Hello, ' + name + '!!'\r\n    print('greeting sent to', name, flush=True)",
   "new_string":"    # greet says hello to whoever calls it\r\n    log.info('greet called for %s', name)\r\n    return 'Hello, ' + name + '!'\r\n    print('greeting sent to', name, flush=True)"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"e1","content":"The file /w/app.py has been updated. Run: grep -n \"Hello, Ada\" tests/test_greet.py"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"x1","name":"exec","input":{},"arguments":"{\"cmd\":\"grep -n \\\"Hello, Ada\\\" tests/test_greet.py\"}"}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"x1","content":"12:    assert greet('Ada') == 'Hello, Ada!'"}]}
])json";

// The same message with every result's content replaced by "[masked]", or only the one of `id`.
MessagePtr masked(const Message& m, const std::string& only = "") {
  json::object o = m.json();
  for (auto& b : o.at("content").as_array())
    if (b.as_object().at("type") == "tool_result" && (only.empty() || b.as_object().at("tool_use_id").as_string() == only)) b.as_object()["content"] = "[masked]";
  return *Message::from_json(std::move(o));
}

std::shared_ptr<const Meter> chars4() { return *make_meter(MeterSpec{"chars4", "", ""}); }

TEST(BenchEvidence, ProbesAreLinesTheNextActionQuotedFromAToolAndNoOnesOwnWords) {
  const Conversation session = parse_or_die(kSession);
  const auto meter = chars4();
  const bench::EvidenceIndex index(session, bench::call_answers(session), *meter);
  EXPECT_EQ(index.probes(0), 0u);  // m1 quotes nothing from a tool
  // Call 1 (m3's Edit): old_string's four lines less the comment (the user's words, m0) and the
  // log line (the agent's, m1's text): "return 'Hello, ' + name + '!!'" (30 bytes, CR trimmed) and
  // "print('greeting sent to', name, flush=True)" (43). new_string's changed line is 29 bytes; its
  // others are the same lines. Line 6, in r1's result, is only in m3's thinking: not an action.
  EXPECT_EQ(index.probes(1), 2u);
  // Call 2 (m5): the decoded arguments' `grep -n "Hello, Ada" tests/test_greet.py` (40 bytes) is
  // in e1's result; the JSON text itself (quotes escaped) is not.
  EXPECT_EQ(index.probes(2), 1u);
}

TEST(BenchEvidence, AProbeIsVisibleInAnyStringOfTheRequestAndAMissIsChargedOncePerResult) {
  const Conversation session = parse_or_die(kSession);
  const auto meter = chars4();
  const bench::EvidenceIndex index(session, bench::call_answers(session), *meter);
  const auto& m = session.messages();
  bench::EvidenceMeter evidence(index);

  bench::Evidence whole;  // the history as it was: both lines in r1's and g1's results
  evidence.measure(1, session.with_messages({m[0], m[1], m[2]}), 1000, whole);
  EXPECT_EQ(whole.calls, 1u);
  EXPECT_EQ(whole.probes, 2u);
  EXPECT_EQ(whole.visible, 2u);
  EXPECT_EQ(whole.refetches, 0u);

  bench::Evidence r1_masked;  // a message a pipeline wrote: g1's result still holds both lines
  evidence.measure(1, session.with_messages({m[0], m[1], masked(*m[2], "r1")}), 1000, r1_masked);
  EXPECT_EQ(r1_masked.visible, 2u);

  bench::Evidence both_masked;
  evidence.measure(1, session.with_messages({m[0], m[1], masked(*m[2])}), 1000, both_masked);
  EXPECT_EQ(both_masked.probes, 2u);
  EXPECT_EQ(both_masked.visible, 0u);
  // Both lines are in g1's result (101 chars with the newline the text ends with: chars4 counts
  // ⌈101/4⌉ = 26 tokens) and in r1's larger one: g1's is fetched again, once for both.
  EXPECT_EQ(both_masked.refetches, 1u);
  EXPECT_EQ(both_masked.refetch_read, 1000u);  // the history sent at that call
  EXPECT_EQ(both_masked.refetch_write, 26u);
  EXPECT_EQ(both_masked.refetch_output, 50u);
  ASSERT_EQ(both_masked.misses.size(), 2u);
  EXPECT_EQ(both_masked.misses[0].call, 2u);  // 1-based
  EXPECT_EQ(both_masked.misses[0].line, "return 'Hello, ' + name + '!!'");
  EXPECT_EQ(both_masked.misses[0].from, "Grep /w (g1, messages.2)");

  bench::Evidence e1_masked;  // call 2: e1's result (82 chars + newline: ⌈83/4⌉ = 21 tokens) masked
  evidence.measure(2, session.with_messages({m[0], m[1], m[2], m[3], masked(*m[4])}), 700, e1_masked);
  EXPECT_EQ(e1_masked.visible, 0u);
  EXPECT_EQ(e1_masked.refetch_read, 700u);
  EXPECT_EQ(e1_masked.refetch_write, 21u);
  ASSERT_EQ(e1_masked.misses.size(), 1u);
  EXPECT_EQ(e1_masked.misses[0].from, "Edit /w/app.py (e1, messages.4)");

  bench::Evidence none;  // call 0 has no probe: not measured
  evidence.measure(0, session.with_messages({m[0]}), 10, none);
  EXPECT_EQ(none.calls, 0u);
}

const std::string kBench = COMPACTOR_BENCH_DIR;  // tests/bench

std::map<std::string, json::object> bench_lines(const std::string& out) {
  std::map<std::string, json::object> lines;
  const std::string text = read_file(out + "/sessions.jsonl");
  for (std::size_t start = 0, nl; start < text.size(); start = nl + 1) {
    nl = text.find('\n', start);
    json::object o = json::parse(text.substr(start, nl - start)).as_object();
    lines[std::string(o.at("session").as_string()) + "|" + std::string(o.at("config").as_string())] = o;
  }
  return lines;
}

std::uint64_t u(const json::object& o, const char* key) { return o.at(key).to_number<std::uint64_t>(); }

// tests/bench/evidence/quoted-edit.json, one message a line (chars as written; chars4 tokens ⌈c/4⌉):
//   m0 user prompt quoting the comment line      121 chars → 31 tokens
//   m1 Read r1 /w/app.py                          110 → 28
//   m2 r1's result: 53 lines of cat -n, 2,566 chars decoded   2,754 → 689
//   m3 Bash b1                                    108 → 27
//   m4 b1's result "1 failed"                      90 → 23
//   m5 thinking + Edit e1: old_string = the comment line and "    return 'Hello, ' + name + '!!'"
//   m6 e1's result; m7 text. Calls before m1, m3, m5, m7.
// The one probe: at call 3, "return 'Hello, ' + name + '!!'" (the comment is the user's words).
// micro.yaml at call 3 (3,183 chars > 2,000) masks r1's result (b1's is the newest, kept): m2' is
// 82 chars of framing + the marker "[compactor archived result of Read /w/app.py, 2566 chars: "
// (58) + receipt (71) + "]" (1) + the restore sentence once (184) = 396 chars → 99 tokens, so call
// 3 sends 31 + 28 + 99 + 27 + 23 = 208. The probe is missed: re-fetch = 208 read + r1's result
// (2,566 chars + newline → ⌈2,567/4⌉ = 642 tokens) written + 50 output; at 0.30, 3.75 and 15 USD
// per million: 208 × 300 + 642 × 3,750 + 50 × 15,000 = 62,400 + 2,407,500 + 750,000 = 3,219,900 nano-USD.
// quoted-edit-short.json is m0..m6 (calls before m1, m3, m5): micro saves 798 − 208 = 590 input
// tokens at call 3 (1,770,000 nano-USD), less than the re-fetch: dearer than uncompacted only
// with it (5,166,000 + 3,219,900 = 8,385,900 against 6,936,000).
TEST(BenchEvidence, TheBenchChargesAMissedQuoteAndComparesCostsWithTheCharge) {
  test::ScratchFolder folder("bench-evidence");
  const std::string out = (folder.path() / "out").string();
  auto r = run_cli({"bench", "--corpus", kBench + "/evidence", "--config", kBench + "/configs/plain.yaml", "--config",
                    kBench + "/configs/micro.yaml", "--prices", kBench + "/prices.yaml", "--meter", "chars4", "--out", out,
                    "--explain", "--fail-if-dearer"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // --fail-if-dearer: the short session, with its re-fetch
  auto lines = bench_lines(out);
  const std::string plain = kBench + "/configs/plain.yaml", micro = kBench + "/configs/micro.yaml";
  const json::object& kept = lines.at("quoted-edit.json|" + plain).at("evidence").as_object();
  EXPECT_EQ(u(kept, "calls"), 1u);
  EXPECT_EQ(u(kept, "probes"), 1u);
  EXPECT_EQ(u(kept, "visible"), 1u);
  EXPECT_EQ(u(kept, "refetch_nusd"), 0u);

  const json::object& line = lines.at("quoted-edit.json|" + micro);
  const json::object& missed = line.at("evidence").as_object();
  EXPECT_EQ(line.at("per_call").at("sent").as_array().at(2).to_number<std::uint64_t>(), 208u);
  EXPECT_EQ(u(missed, "probes"), 1u);
  EXPECT_EQ(u(missed, "visible"), 0u);
  EXPECT_EQ(u(missed, "refetches"), 1u);
  const json::object& tokens = missed.at("refetch_tokens").as_object();
  EXPECT_EQ(u(tokens, "cache_read"), 208u);
  EXPECT_EQ(u(tokens, "cache_write"), 642u);
  EXPECT_EQ(u(tokens, "output"), 50u);
  EXPECT_EQ(u(missed, "refetch_nusd"), 3219900u);

  // The lines name a config by its short name: its file's stem.
  EXPECT_NE(r.out.find("- quoted-edit-short.json (micro): $0.0084 ($0.0032 of it re-fetching missed evidence) vs $0.0069 "
                       "uncompacted (+20.9%)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("- quoted-edit.json (micro): $"), std::string::npos) << r.out;  // 9,720,900 < 10,041,000
  EXPECT_NE(r.out.find("- quoted-edit.json (micro): call 3: \"return 'Hello, ' + name + '!!'\" from Read /w/app.py (r1, messages.2)\n"),
            std::string::npos)
      << r.out;
  // The table's row: 2 probes, none visible, 2 missed, 2 × 3,219,900 nano-USD re-fetched.
  EXPECT_NE(r.out.find("| 0.0% | 2 | 0.0064 | 0.0181 | +6.7% |"), std::string::npos) << r.out;
  const std::string csv = read_file(out + "/sessions.csv");
  EXPECT_NE(csv.find(",1,1,0,1,1,0.003219900,0.009720900\n"), std::string::npos) << csv;
  EXPECT_NE(read_file(out + "/evidence.svg").find("<circle"), std::string::npos);
}

// The generator's Edits quote what a Read of the same file returned, as an agent's do: its
// sessions carry probes that come from Reads (before, only paths listed by Grep and Glob were),
// every one visible when nothing is compacted, and missed once micro masked the Read.
TEST(BenchEvidence, GeneratedSessionsQuoteTheirReadsInTheirEdits) {
  test::ScratchFolder folder("bench-evidence-generated");
  fs::create_directories(folder.path() / "corpus");
  auto g = run_program(COMPACTOR_GENERATE_SESSION, {"--exchanges", "80", "--seed", "3", "--output", (folder.path() / "corpus" / "s.json").string()});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const std::string out = (folder.path() / "out").string();
  auto r = run_cli({"bench", "--corpus", (folder.path() / "corpus").string(), "--config", kBench + "/configs/micro.yaml", "--prices",
                    kBench + "/prices.yaml", "--meter", "chars4", "--out", out, "--explain"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = bench_lines(out);
  const json::object& e = lines.at("s.json|uncompacted").at("evidence").as_object();
  EXPECT_GE(u(e, "probes"), 20u);
  EXPECT_EQ(u(e, "visible"), u(e, "probes"));
  std::size_t from_read = 0;
  for (std::size_t at = 0; (at = r.out.find("\" from Read /home/dev/project/", at)) != std::string::npos; ++at) ++from_read;
  EXPECT_GE(from_read, 10u) << r.out;
}

}  // namespace
}  // namespace compactor::test
