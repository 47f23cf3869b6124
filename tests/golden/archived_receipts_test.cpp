// The run report lists every receipt a run wrote, with the stage that wrote it, what it holds and
// its size, and counts them per stage; the summary line says the same. Each is checked against
// what the receipt restores to and against the input: a micro receipt is one tool result's content
// (JSON, a string result JSON-encoded), the summary snapshot is the history it was made from, one
// message a line, a budget_persist receipt is a persisted output whose marker keeps its preview.
#include "support/test_support.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

struct CliRun {
  test::CommandResult result;
  json::object report;
  json::value input, output;
};

CliRun run_in(const test::ScratchFolder& dir, const std::string& config, const std::string& input) {
  fs::copy_file(input, dir / "in.json");
  CliRun r;
  r.result = test::run_cli({"run", "--config", config, "--input", "in.json", "--output", "out.json", "--report", "report.json"}, "",
                           dir.string());
  r.report = json::parse(test::read_file((dir / "report.json").string())).as_object();
  r.input = json::parse(test::read_file((dir / "in.json").string()));
  r.output = json::parse(test::read_file((dir / "out.json").string()));
  return r;
}

const json::array& messages_of(const json::value& doc) { return doc.is_array() ? doc.as_array() : doc.at("messages").as_array(); }

// The input tool result whose output counterpart names `receipt` in its content, or null.
const json::value* result_content_named(const CliRun& r, const std::string& receipt) {
  const json::array& in = messages_of(r.input);
  for (const json::value& m : messages_of(r.output)) {
    const json::value& content = m.at("content");
    if (!content.is_array()) continue;
    for (const json::value& b : content.as_array()) {
      if (b.at("type") != "tool_result" || json::serialize(b.at("content")).find(receipt) == std::string::npos) continue;
      for (const json::value& im : in)
        if (im.at("content").is_array())
          for (const json::value& ib : im.at("content").as_array())
            if (ib.at("type") == "tool_result" && ib.at("tool_use_id") == b.at("tool_use_id")) return &ib.at("content");
    }
  }
  return nullptr;
}

bool is_result_content_of_input(const CliRun& r, const json::value& content) {
  for (const json::value& m : messages_of(r.input))
    if (m.at("content").is_array())
      for (const json::value& b : m.at("content").as_array())
        if (b.at("type") == "tool_result" && b.at("content") == content) return true;
  return false;
}

// The README's run (the demo budget, small enough that micro and summarize both archive).
TEST(ArchivedReceipts, TheReadmeRunListsEachReceiptWithItsStageKindAndSize) {
  test::ScratchFolder dir("archived-receipts-default");
  CliRun r = run_in(dir, std::string(COMPACTOR_CONFIGS_DIR) + "/demo-50k-chars.yaml", test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"));
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json::array& archived = r.report.at("archived").as_array();
  ASSERT_GT(archived.size(), 2u);
  std::map<std::string, std::size_t> per_stage;
  std::map<std::string, std::uint64_t> bytes_per_stage;
  std::uint64_t total = 0;
  for (const json::value& a : archived) {
    const std::string receipt(a.at("receipt").as_string()), stage(a.at("stage").as_string()), kind(a.at("kind").as_string());
    const auto bytes = static_cast<std::uint64_t>(a.at("bytes").as_int64());
    ++per_stage[stage];
    bytes_per_stage[stage] += bytes;
    total += bytes;
    auto restored = test::run_cli({"restore", receipt}, "", dir.string());
    ASSERT_EQ(restored.exit_code, 0) << restored.err;
    EXPECT_EQ(restored.out.size(), bytes) << receipt;
    if (stage == "micro") {
      EXPECT_EQ(kind, "tool_result");
      // A result of the input, given back as the JSON it held (the marker naming it may since be
      // in the summary's snapshot).
      EXPECT_TRUE(is_result_content_of_input(r, json::parse(restored.out))) << receipt;
    } else {
      EXPECT_EQ(stage, "summarize");
      EXPECT_EQ(kind, "summary_snapshot");
      // The snapshot is the whole history the summary was made from (the input's messages as micro
      // left them), one JSON value a line: the same roles and blocks.
      std::istringstream lines(restored.out);
      std::size_t i = 0;
      for (std::string line; std::getline(lines, line); ++i) {
        const json::value was = messages_of(r.input).at(i), now = json::parse(line);
        EXPECT_TRUE(now.at("role") == was.at("role")) << "line " << i;
        EXPECT_EQ(now.at("content").is_array() ? now.at("content").as_array().size() : 0,
                  was.at("content").is_array() ? was.at("content").as_array().size() : 0) << "line " << i;
      }
      EXPECT_EQ(i, messages_of(r.input).size());
    }
  }
  EXPECT_EQ(per_stage["summarize"], 1u);
  for (const json::value& s : r.report.at("stages").as_array()) {
    const std::string stage(s.at("stage").as_string());
    EXPECT_EQ(s.at("archived").at("receipts").as_int64(), static_cast<std::int64_t>(per_stage[stage])) << stage;
    EXPECT_EQ(s.at("archived").at("bytes").as_int64(), static_cast<std::int64_t>(bytes_per_stage[stage])) << stage;
  }
  const std::string line = "archived: " + std::to_string(archived.size()) + " receipts, " + std::to_string(total) + " bytes (micro: " +
                           std::to_string(per_stage["micro"]) + " tool results, " + std::to_string(bytes_per_stage["micro"]) +
                           " bytes; summarize: 1 summary snapshot, " + std::to_string(bytes_per_stage["summarize"]) + " bytes)\n";
  EXPECT_NE(r.result.out.find(line), std::string::npos) << r.result.out;
}

TEST(ArchivedReceipts, APersistedOutputIsTold) {
  test::ScratchFolder dir("archived-receipts-persisted");
  const std::string case_dir = std::string(COMPACTOR_GOLDEN_DIR) + "/run/budget_persist_biggest_first";
  fs::copy_file(case_dir + "/pipeline.yaml", dir / "pipeline.yaml");
  CliRun r = run_in(dir, "pipeline.yaml", case_dir + "/input.json");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json::array& archived = r.report.at("archived").as_array();
  ASSERT_EQ(archived.size(), 2u);  // the 6,000- and 5,000-char results
  for (const json::value& a : archived) {
    EXPECT_EQ(a.at("stage"), "budget_persist");
    EXPECT_EQ(a.at("kind"), "persisted_output");
    const json::value* original = result_content_named(r, std::string(a.at("receipt").as_string()));
    ASSERT_NE(original, nullptr);
    EXPECT_EQ(a.at("bytes").as_int64(), static_cast<std::int64_t>(json::serialize(*original).size()));
  }
}

}  // namespace
}  // namespace compactor
