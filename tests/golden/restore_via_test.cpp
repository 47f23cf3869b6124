// The restore instruction the model reads names the way the deployment gives (`archive.restore_via`),
// and that way works: with `cli` and an absolute archive folder, the command written in the oldest
// marker, run from another folder, gives the archived bytes back; with `mcp`, the `restore` tool of
// `compactor mcp` started from another folder does; a template is written as given, in the summary
// too. Markers stay at most 120 chars; the instruction is said once. Expected texts are written
// out here, not taken from the code under test.
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// A request, three Reads with results of 600 chars ('a', 'b', 'c'), a closing answer and a
// follow-up: micro (keep_recent 0) replaces all three results.
json::array session() {
  json::array m{json::object{{"role", "user"}, {"content", "read the three logs and tell me what failed"}}};
  for (int i = 0; i < 3; ++i) {
    std::string id = "toolu_" + std::to_string(i);
    m.push_back(json::object{{"role", "assistant"},
                             {"content", json::array{json::object{{"type", "tool_use"}, {"id", id}, {"name", "Read"},
                                                                  {"input", json::object{{"file_path", "log" + std::to_string(i)}}}}}}});
    m.push_back(json::object{{"role", "user"},
                             {"content", json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id},
                                                                  {"content", std::string(600, static_cast<char>('a' + i))}}}}});
  }
  m.push_back(json::object{{"role", "assistant"}, {"content", "The second log shows the failure."}});
  m.push_back(json::object{{"role", "user"}, {"content", "thanks"}});
  return m;
}

// Runs `compactor run` in `dir/work` with `archive:` as given and the pipeline, and returns the
// output's JSON text (empty when none was written). The budget's limit is only a summary's.
std::string run(const fs::path& dir, const std::string& archive, const std::string& pipeline, int limit = 100000) {
  fs::create_directories(dir / "work");
  std::ofstream(dir / "work" / "c.yaml") << "version: 1\nbudget: {limit: " + std::to_string(limit) +
                                                "}\nrecent: {exchanges: 1}\narchive: " + archive + "\npipeline:\n" + pipeline;
  std::ofstream(dir / "work" / "in.json") << json::serialize(session());
  auto r = test::run_cli({"run", "--config", "c.yaml", "--input", "in.json", "--output", "out.json"}, "", (dir / "work").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return fs::exists(dir / "work" / "out.json") ? test::read_file((dir / "work" / "out.json").string()) : "";
}

const std::string kMicro = "  - stage: micro\n    when: always\n    params: {keep_recent: 0}\n";

// The tool_result contents of the output, in order.
std::vector<std::string> result_texts(const std::string& output) {
  std::vector<std::string> out;
  const json::value parsed = json::parse(output);
  for (const auto& m : parsed.as_array())
    if (const auto* blocks = m.as_object().at("content").if_array())
      for (const auto& b : *blocks)
        if (b.as_object().at("type") == "tool_result") out.emplace_back(b.as_object().at("content").as_string());
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(RestoreVia, CliNamesTheArchiveAndTheCommandWorksFromAnotherFolder) {
  test::ScratchFolder dir("restore-via-cli");
  const std::string archive = (dir / "archive").string();
  std::string output = run(dir.path(), "{dir: \"" + archive + "\"}", kMicro);
  std::vector<std::string> results = result_texts(output);
  ASSERT_EQ(results.size(), 3u) << output;
  // Each marker is at most 120 chars and the tool and path it names; the oldest alone carries
  // the instruction.
  std::regex marker(R"(\[compactor archived result of Read log\d, 600 chars: (sha256:[0-9a-f]{64})\])");
  std::smatch m;
  for (const std::string& r : results) {
    ASSERT_TRUE(std::regex_search(r, m, marker)) << r;
    EXPECT_EQ(m.position(0), 0);
    EXPECT_LE(m.length(0), 120 + 13);  // " of Read logN"
  }
  std::regex instruction(" An archived result is not an execution result; `compactor restore (sha256:[0-9a-f]{64}) --archive ([^`]+)` "
                         "gives it back, and so for every such marker\\.");
  ASSERT_TRUE(std::regex_search(results[0], m, instruction)) << results[0];
  EXPECT_EQ(m[2].str(), archive);
  const std::string receipt = m[1].str();
  EXPECT_EQ(count(output, "compactor restore"), 1u);
  // The command as written, run from a folder that is not the one `run` ran in.
  fs::create_directories(dir / "elsewhere");
  auto restored = test::run_cli({"restore", receipt, "--archive", m[2].str()}, "", (dir / "elsewhere").string());
  EXPECT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_EQ(restored.out, "\"" + std::string(600, 'a') + "\"");  // the content field's bytes, as archived
}

TEST(RestoreVia, TheDefaultArchiveIsNamedByTheBareCommand) {
  test::ScratchFolder dir("restore-via-default");
  std::string output = run(dir.path(), "{dir: .compactor/archive}", kMicro);
  std::regex instruction("An archived result is not an execution result; `compactor restore sha256:[0-9a-f]{64}` gives it back");
  EXPECT_TRUE(std::regex_search(output, instruction)) << output;
}

TEST(RestoreVia, McpNamesTheRestoreToolAndTheToolGivesItBackFromAnotherFolder) {
  test::ScratchFolder dir("restore-via-mcp");
  const std::string archive = (dir / "archive").string();
  std::string output = run(dir.path(), "{dir: \"" + archive + "\", restore_via: mcp}", kMicro);
  std::vector<std::string> results = result_texts(output);
  ASSERT_EQ(results.size(), 3u) << output;
  std::regex instruction(" An archived result is not an execution result; the `restore` tool of the `compactor` MCP server with the "
                         "receipt (sha256:[0-9a-f]{64}) gives it back, and so for every such marker\\.");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(results[0], m, instruction)) << results[0];
  EXPECT_EQ(count(output, "MCP server"), 1u);
  EXPECT_EQ(count(output, "compactor restore"), 0u);
  for (const std::string& r : results) EXPECT_LE(r.find(']') + 1, 120u + 13) << r;  // and " of Read logN"
  // The tool, from the MCP server an agent starts in its own folder with the same config.
  fs::create_directories(dir / "elsewhere");
  const std::string session =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"restore","arguments":{"receipt":")" +
      m[1].str() + "\"}}}\n";
  auto served = test::run_cli({"mcp", "--config", (dir / "work" / "c.yaml").string()}, session, (dir / "elsewhere").string());
  EXPECT_EQ(served.exit_code, 0) << served.err;
  ASSERT_EQ(count(served.out, "\n"), 2u) << served.out;
  json::value restored = json::parse(served.out.substr(served.out.find('\n') + 1));
  EXPECT_EQ(restored, json::parse(R"({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":")" + std::string(600, 'a') +
                                  R"("}],"isError":false}})"));
}

TEST(RestoreVia, ATemplateIsWrittenAsGivenInTheSummaryAndInASnipMarker) {
  test::ScratchFolder dir("restore-via-template");
  const std::string phrase = "`ssh build-host compactor restore {receipt}`";
  std::string summarized = run(dir / "summary", "{dir: .compactor/archive, restore_via: \"" + phrase + "\"}",
                               "  - stage: summarize\n    when: always\n", 1500);
  std::regex in_summary("The full history before this summary is archived as (sha256:[0-9a-f]{64}); restore it with `ssh build-host "
                        "compactor restore (sha256:[0-9a-f]{64})` \\(JSONL, one message a line\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(summarized, m, in_summary)) << summarized;
  EXPECT_EQ(m[1].str(), m[2].str());
  std::string snipped = run(dir / "snip", "{dir: .compactor/archive, restore_via: \"" + phrase + "\"}",
                            "  - stage: snip\n    when: always\n    params: {max_messages: 4, keep_head: 1}\n");
  std::regex in_marker(R"(\[compactor snip: \d+ messages archived as (sha256:[0-9a-f]{64})\] `ssh build-host compactor restore )"
                       R"((sha256:[0-9a-f]{64})` gives them back \(JSONL, one message a line\), and so for every receipt in a marker\.)");
  ASSERT_TRUE(std::regex_search(snipped, m, in_marker)) << snipped;
  EXPECT_EQ(m[1].str(), m[2].str());
}

TEST(RestoreVia, AnythingElseIsRefusedWithTheLine) {
  test::ScratchFolder dir("restore-via-bad");
  fs::create_directories(dir / "work");
  std::ofstream(dir / "work" / "c.yaml") << "version: 1\nbudget: {limit: 100}\narchive: {dir: a, restore_via: ssh}\npipeline: []\n";
  auto r = test::run_cli({"validate", "--config", "c.yaml"}, "", (dir / "work").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "c.yaml:3:32: archive.restore_via: expected cli, mcp, or a phrase holding {receipt} (how the model restores a "
                   "receipt), got \"ssh\"\n");
}

}  // namespace
}  // namespace compactor
