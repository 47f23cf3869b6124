// The micro stage, loaded from its real plugin file.
#include "support/test_support.hpp"

#include "model/active_request.hpp"
#include "model/conversation_host.hpp"
#include "archive/archive_store.hpp"
#include "loader/builtin_checkers.hpp"
#include "loader/plugin_loader.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace compactor {
namespace {

class QuietLogger final : public StageLogger {
 public:
  void log(LogLevel, std::string_view) override {}
};

const RegisteredStage& micro() {
  static const RegisteredStage* stage = [] {
    auto loaded = PluginRegistry::instance().load(std::string(COMPACTOR_PLUGIN_DIR) + "/compactor_stage_micro.so");
    if (!loaded) throw std::runtime_error(loaded.error().message);
    return PluginRegistry::instance().find_stage("micro");
  }();
  return *stage;
}

Conversation run_micro(const Conversation& c, std::int64_t keep_recent, std::size_t exchanges, std::string until = "all",
                       std::uint64_t target = 0, std::string order = "newest") {
  ParamValues p;
  for (const auto& spec : micro().info->params) p.set(spec.name, *spec.default_value);
  p.set("order", order);
  p.set("keep_recent", keep_recent);
  p.set("min_chars", std::int64_t{110});
  p.set("until", until);
  auto stage = create_stage(micro(), p);
  if (!stage) throw std::runtime_error(stage.error().message);
  QuietLogger log;
  test::ScratchFolder scratch("micro-test");  // outlives the archive, which is declared after it
  ArchiveStore archive((scratch / "archive").string());
  StageContext ctx(archive, log);
  ctx.budget = {SizeUnit::chars, target, target};
  ctx.tail = compute_protected_tail(c, exchanges);
  auto r = run_stage(**stage, micro(), c, ctx);
  if (!r || r->declined()) throw std::runtime_error("micro did not return a candidate");
  // Whatever micro returns must pass every checker.
  auto requests = find_active_request(c).texts;  // CheckInput only views it
  Conversation out = ConversationHost::in_frame_of(*r, c);
  CheckInput in{c, out, ctx.tail, requests};
  in.archive = &archive;
  auto v = run_checkers(make_builtin_checkers(), in);
  EXPECT_TRUE(v.empty()) << v.front().to_string();
  return out;
}

// user ask; then n exchanges, each one tool call with a result of `size` chars; then a final
// assistant text and a user follow-up when `closed`.
Conversation exchanges(int n, int size, bool closed) {
  std::string out = R"([{"role":"user","content":"look at the logs"})";
  for (int i = 0; i < n; ++i) {
    std::string id = "toolu_" + std::to_string(i);
    out += R"(,{"role":"assistant","content":[{"type":"tool_use","id":")" + id + R"(","name":"Read","input":{}}]})";
    out += R"(,{"role":"user","content":[{"type":"tool_result","tool_use_id":")" + id + R"(","content":")" +
           std::string(static_cast<std::size_t>(size), 'x') + R"("}]})";
  }
  if (closed) out += R"(,{"role":"assistant","content":"done"},{"role":"user","content":"thanks"})";
  return test::parse_or_die(out + "]");
}

std::vector<bool> replaced(const Conversation& c) {
  std::vector<bool> out;
  for (const MessagePtr& m : c.messages())
    for (const Block& b : m->blocks())
      if (b.kind() == BlockKind::tool_result) out.push_back(b.content()->as_string().starts_with("[compactor archived "));
  return out;
}

TEST(MicroStage, KeepsTheNewestResultsAndReplacesOlderLargeOnes) {
  auto c = exchanges(6, 500, true);
  auto out = run_micro(c, 3, 0);
  EXPECT_EQ(replaced(out), (std::vector<bool>{true, true, true, false, false, false}));
  std::string receipt = receipt_of("\"" + std::string(500, 'x') + "\"");
  // The oldest marker also says how to restore; the others are the short form (≤ 120 chars, and
  // the tool's name: these calls name no path).
  EXPECT_EQ(out[2].blocks()[0].content()->as_string(),
            "[compactor archived result of Read, 500 chars: " + receipt + "] An archived result is not an execution result; "
            "`compactor restore " + receipt + "` gives it back, and so for every such marker.");
  EXPECT_EQ(out[4].blocks()[0].content()->as_string(), "[compactor archived result of Read, 500 chars: " + receipt + "]");
  EXPECT_LE(count_code_points(out[4].blocks()[0].content()->as_string()), 120u + std::string(" of Read").size());
  // Untouched messages are the same objects.
  EXPECT_EQ(out.messages()[1], c.messages()[1]);
  EXPECT_EQ(out.messages()[8], c.messages()[8]);
}

TEST(MicroStage, LeavesSmallResultsUnseenResultsAndTheTail) {
  EXPECT_EQ(replaced(run_micro(exchanges(6, 100, true), 3, 0)), std::vector<bool>(6, false));
  // Open tool loop: the last results have not been seen by the model.
  EXPECT_EQ(replaced(run_micro(exchanges(6, 500, false), 0, 0)), (std::vector<bool>{true, true, true, true, true, false}));
  // The protected tail (2 exchanges) stays whole even with keep_recent 0.
  EXPECT_EQ(replaced(run_micro(exchanges(6, 500, true), 0, 2)), (std::vector<bool>{true, true, true, true, true, false}));
}

TEST(MicroStage, UntilTargetStopsOnceTheTargetIsMet) {
  auto c = exchanges(6, 500, true);
  std::uint64_t one_saving = c.size_in(SizeUnit::chars) - run_micro(c, 5, 0).size_in(SizeUnit::chars);
  ASSERT_GT(one_saving, 0u);
  // A target that one replacement reaches: only the newest eligible result goes (the prefix the
  // prompt cache holds changes as late as it can), and it says how to restore.
  auto out = run_micro(c, 0, 0, "target", c.size_in(SizeUnit::chars) - one_saving);
  EXPECT_EQ(replaced(out), (std::vector<bool>{false, false, false, false, false, true}));
}

// A marker names the tool and the path it worked on (the path's end kept when long), and a
// failed result's marker keeps its first line: what the agent must not discover again.
TEST(MicroStage, AMarkerNamesItsToolAndPathAndAFailureItsFirstLine) {
  const std::string long_path = "/repo/" + std::string(200, 'd') + "/main.py";
  auto c = test::parse_or_die(
      R"([{"role":"user","content":"fix it"},)"
      R"({"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"src/app.py"}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":")" + std::string(600, 'r') + R"("}]},)"
      R"({"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Bash","input":{"command":"make"}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"b","is_error":true,"content":"\n  make: *** [all] Error 2  \n)" +
      std::string(600, 'e') + R"("}]},)"
      R"({"role":"assistant","content":[{"type":"tool_use","id":"c","name":"Read","input":{"file_path":")" + long_path + R"("}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":")" + std::string(600, 'l') + R"("}]},)"
      R"({"role":"assistant","content":"done"},{"role":"user","content":"thanks"}])");
  auto out = run_micro(c, 0, 0);
  ASSERT_EQ(replaced(out), (std::vector<bool>{true, true, true}));
  EXPECT_TRUE(out[2].blocks()[0].content()->as_string().starts_with("[compactor archived result of Read src/app.py, 600 chars: sha256:"));
  EXPECT_TRUE(out[4].blocks()[0].content()->as_string().starts_with(
      "[compactor archived error of Bash: \"make: *** [all] Error 2\", 629 chars: sha256:"))
      << out[4].blocks()[0].content()->as_string();
  const std::string tail = "…" + long_path.substr(long_path.size() - 119);
  EXPECT_TRUE(out[6].blocks()[0].content()->as_string().starts_with("[compactor archived result of Read " + tail + ", 600 chars: sha256:"))
      << out[6].blocks()[0].content()->as_string();
}

// Which results go first, one at a time: the k-th run from the input has a target 440 × k chars
// under it, and a marker saves 475 to 490 of a 600-char result (its label's length), so it
// replaces exactly k (k − 1 save at most 490 × (k − 1) < 440 × k; k save at least 475 × k). The history: Read a.py (m2), make (m4),
// Read b.py (m6), Edit b.py (m8, too short to mask), make again (m10), Read a.py again (m12), ls
// (m14). Newest first: m14, m12, m10, m6, m4, m2. Stale first: the first make's output and the
// first read of a.py (each superseded by a later call), newest first; then the others; the read of
// b.py, the file still being edited, last.
std::vector<std::size_t> masking_order(const Conversation& c, const std::string& order) {
  std::vector<std::size_t> sequence;
  std::vector<bool> before(7, false);
  for (std::uint64_t k = 1; k <= 6; ++k) {
    const std::vector<bool> now = replaced(run_micro(c, 0, 0, "target", c.size_in(SizeUnit::chars) - 440 * k, order));
    for (std::size_t i = 0; i < now.size(); ++i)
      if (now[i] && !before[i]) sequence.push_back(i);
    before = now;
  }
  return sequence;
}

TEST(MicroStage, StaleFirstMasksWhatALaterCallSupersededFirstAndAReadStillBeingEditedLast) {
  auto call = [](const std::string& id, const std::string& tool, const std::string& input, const std::string& result) {
    return R"(,{"role":"assistant","content":[{"type":"tool_use","id":")" + id + R"(","name":")" + tool + R"(","input":)" + input +
           R"(}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":")" + id + R"(","content":")" + result + R"("}]})";
  };
  auto c = test::parse_or_die(R"([{"role":"user","content":"fix it"})" +
                              call("a", "Read", R"({"file_path":"a.py"})", std::string(600, 'a')) +
                              call("b", "Bash", R"({"command":"make"})", std::string(600, 'm')) +
                              call("c", "Read", R"({"file_path":"b.py"})", std::string(600, 'b')) +
                              call("d", "Edit", R"({"file_path":"b.py","old_string":"x","new_string":"y"})", "ok") +
                              call("e", "Bash", R"({"command":"make"})", std::string(600, 'n')) +
                              call("f", "Read", R"({"file_path":"a.py"})", std::string(600, 'A')) +
                              call("g", "Bash", R"({"command":"ls"})", std::string(600, 'l')) +
                              R"(,{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}])");
  EXPECT_EQ(masking_order(c, "newest"), (std::vector<std::size_t>{6, 5, 4, 2, 1, 0}));
  EXPECT_EQ(masking_order(c, "stale_first"), (std::vector<std::size_t>{1, 0, 6, 5, 4, 2}));
}

TEST(MicroStage, SecondRunChangesNothing) {
  auto once = run_micro(exchanges(6, 500, true), 3, 0);
  auto twice = run_micro(once, 3, 0);
  for (std::size_t i = 0; i < once.size(); ++i) EXPECT_EQ(twice.messages()[i], once.messages()[i]);
}

}  // namespace
}  // namespace compactor
