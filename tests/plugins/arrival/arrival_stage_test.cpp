// The arrival stage, loaded from its real plugin file: what it does to the newest results, on
// histories built here, every candidate checked by the built-in checkers as the host would.
#include "support/test_support.hpp"

#include "model/active_request.hpp"
#include "model/conversation_host.hpp"
#include "archive/archive_store.hpp"
#include "loader/builtin_checkers.hpp"
#include "loader/plugin_loader.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace compactor {
namespace {

namespace json = boost::json;

class QuietLogger final : public StageLogger {
 public:
  void log(LogLevel, std::string_view) override {}
};

const RegisteredStage& arrival() {
  static const RegisteredStage* stage = [] {
    auto loaded = PluginRegistry::instance().load(std::string(COMPACTOR_PLUGIN_DIR) + "/compactor_stage_arrival.so");
    if (!loaded) throw std::runtime_error(loaded.error().message);
    return PluginRegistry::instance().find_stage("arrival");
  }();
  return *stage;
}

// A prompt, then one exchange per call: (tool, input, result).
struct Call {
  std::string tool;
  json::object input;
  std::string result;
};
Conversation history(const std::vector<Call>& calls) {
  json::array m{json::object{{"role", "user"}, {"content", "fix the build"}}};
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string id = "toolu_" + std::to_string(i);
    m.push_back(json::object{{"role", "assistant"},
                             {"content", json::array{json::object{{"type", "tool_use"}, {"id", id}, {"name", calls[i].tool}, {"input", calls[i].input}}}}});
    m.push_back(json::object{{"role", "user"},
                             {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id}, {"content", calls[i].result}}}}});
  }
  auto c = read_conversation(json::serialize(m), ReadOptions{});
  if (!c) throw std::runtime_error(c.error().message);
  return *c;
}

// The stage's candidate (the input when it has nothing to do), checked; `archive` keeps what it put.
Conversation run_arrival(const Conversation& c, ArchiveStore& archive) {
  ParamValues p;
  for (const auto& spec : arrival().info->params) p.set(spec.name, *spec.default_value);
  auto stage = create_stage(arrival(), p);
  if (!stage) throw std::runtime_error(stage.error().message);
  QuietLogger log;
  StageContext ctx(archive, log);
  ctx.budget = {SizeUnit::chars, 1000000, 1000000};
  ctx.tail = compute_protected_tail(c, 1);
  auto r = run_stage(**stage, arrival(), c, ctx);
  if (!r || r->declined()) throw std::runtime_error("arrival declined");
  if (r->kind() != StageResult::Kind::candidate) return c;
  auto requests = find_active_request(c).texts;
  Conversation out = ConversationHost::in_frame_of(*r, c);
  CheckInput in{c, out, ctx.tail, requests};
  in.archive = &archive;
  in.may_touch_tail = true;
  auto v = run_checkers(make_builtin_checkers(), in);
  EXPECT_TRUE(v.empty()) << v.front().to_string();
  return out;
}

std::string content_of(const Conversation& c, std::size_t message) {
  return std::string(c[message].blocks().front().content()->get_string());
}

// A 10,000-char Bash output (4,000 is the default limit) keeps 1,500 chars at each end around a
// marker: 10,000 − 3,000 = 7,000 chars left out, archived whole under the receipt it names.
TEST(ArrivalStage, ANewShellOutputOverItsLimitKeepsItsHeadAndTail) {
  test::ScratchFolder scratch("arrival-shorten");
  ArchiveStore archive((scratch / "archive").string());
  const std::string output = std::string(5000, 'a') + std::string(5000, 'b');
  Conversation out = run_arrival(history({{"Bash", {{"command", "make"}}, output}}), archive);
  const std::string shaped = content_of(out, 2);
  EXPECT_EQ(shaped.substr(0, 1501), std::string(1500, 'a') + "\n");
  EXPECT_EQ(shaped.substr(shaped.size() - 1501), "\n" + std::string(1500, 'b'));
  EXPECT_NE(shaped.find("[compactor shortened this Bash result: 7000 of its 10000 chars left out here; `compactor restore sha256:"),
            std::string::npos) << shaped.substr(1500, 200);
  const auto receipts = find_receipts(shaped);
  ASSERT_EQ(receipts.size(), 1u);
  ASSERT_NE(archive.find(receipts[0]), nullptr);
  EXPECT_EQ(*archive.find(receipts[0]), json::serialize(json::value(output)));  // the content's exact bytes
}

// Reads are not in the shorten list (an Edit quotes them), an edit's confirmation is never
// touched, and a result the model has already seen is not new: each stays byte for byte.
TEST(ArrivalStage, ReadsNeverToolsAndSeenResultsStayAsTheyAre) {
  test::ScratchFolder scratch("arrival-keep");
  ArchiveStore archive((scratch / "archive").string());
  const std::string big(10000, 'r');
  for (const Call& newest : {Call{"Read", {{"file_path", "/src/a.c"}}, big}, Call{"Edit", {{"file_path", "/src/a.c"}}, big},
                             Call{"read_file", {{"absolute_path", "/src/a.c"}}, big}}) {
    Conversation in = history({{"Bash", {{"command", "make"}}, big}, newest});
    Conversation out = run_arrival(in, archive);
    EXPECT_EQ(out.serialize(), in.serialize()) << newest.tool;
  }
}

// Each agent's shell: Codex's shell and exec_command, Gemini CLI's and Qwen Code's
// run_shell_command, an MCP tool by the mcp__* pattern.
TEST(ArrivalStage, EveryAgentsShellAndMcpToolsAreShortened) {
  test::ScratchFolder scratch("arrival-agents");
  ArchiveStore archive((scratch / "archive").string());
  for (const char* tool : {"shell", "exec_command", "run_shell_command", "mcp__github__search_code"}) {
    Conversation out = run_arrival(history({{tool, {{"command", "ls"}}, std::string(9000, 'x')}}), archive);
    EXPECT_NE(content_of(out, 2).find("[compactor shortened this " + std::string(tool) + " result: 6000 of its 9000 chars"),
              std::string::npos) << tool;
  }
}

// The same command with the same 500-char output: the second output is a reference to the first
// (messages.2), archived; a different command's identical output is not the same call's.
TEST(ArrivalStage, TheSameOutputOfTheSameCallIsAReference) {
  test::ScratchFolder scratch("arrival-same");
  ArchiveStore archive((scratch / "archive").string());
  const std::string listing(500, 'l');
  Conversation out = run_arrival(history({{"Bash", {{"command", "ls"}}, listing}, {"Bash", {{"command", "ls"}}, listing}}), archive);
  const std::string shaped = content_of(out, 4);
  EXPECT_EQ(shaped.rfind("[compactor: the same output as the Bash call of messages.2, 500 chars: sha256:", 0), 0u) << shaped;
  EXPECT_EQ(content_of(out, 2), listing);
  Conversation other = history({{"Bash", {{"command", "ls"}}, listing}, {"Bash", {{"command", "ls -a"}}, listing}});
  EXPECT_EQ(run_arrival(other, archive).serialize(), other.serialize());
}

}  // namespace
}  // namespace compactor
