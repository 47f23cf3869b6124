// Meters in conversations: counts cached per message (a derived conversation recounts only what
// changed), the system and tools of a request body, and `compactor calibrate` recovering a known
// law from synthetic Claude Code logs whose usage it generated.
#include "meter/calibration_fit.hpp"
#include "model/meter_key.hpp"
#include "meter/meter_kinds.hpp"
#include "meter/tokenizer.hpp"
#include "support/test_support.hpp"
#include "model/conversation_host.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

namespace compactor {
namespace {

namespace fs = std::filesystem;

class CountingMeter final : public Meter {
 public:
  CountingMeter() : Meter(MeterKey{}) {}
  std::string_view kind() const override { return "counting"; }
  std::uint64_t count_text(std::string_view utf8) const override {
    ++calls;
    return utf8.size();
  }
  mutable int calls = 0;
};

TEST(Meter, ADerivedConversationRecountsOnlyTheMessagesThatChanged) {
  Conversation input = test::load_or_die(test::real_session_files().front());
  auto meter = std::make_shared<CountingMeter>();
  Conversation metered = ConversationHost::with_meter(input, meter);
  int first = meter->calls;
  ASSERT_GT(first, static_cast<int>(input.size()));  // several blocks a message
  EXPECT_GT(metered.sizes().tokens, 0u);

  // The same messages again: nothing is recounted.
  Conversation again = metered.with_messages(metered.messages());
  EXPECT_EQ(meter->calls, first);
  EXPECT_EQ(again.sizes().tokens, metered.sizes().tokens);

  // One message replaced: only it is counted.
  auto replacement = Message::from_json(boost::json::object{{"role", "user"}, {"content", "twelve bytes"}});
  ASSERT_TRUE(replacement);
  std::vector<MessagePtr> messages = metered.messages();
  std::uint64_t old_tokens = metered.size_of(*messages[0], SizeUnit::tokens);
  messages[0] = *replacement;
  Conversation edited = metered.with_messages(messages);
  EXPECT_EQ(meter->calls, first + 1);
  EXPECT_EQ(edited.sizes().tokens, metered.sizes().tokens - old_tokens + 12);
}

TEST(Meter, ARequestBodysSystemAndToolsCountToo) {
  auto meter = make_meter(MeterSpec{"cl100k", "", ""});
  ASSERT_TRUE(meter) << meter.error().message;
  Conversation c = test::parse_or_die(
      R"({"model":"m","system":"You are terse.","tools":[{"name":"Read","input_schema":{"type":"object"}}],)"
      R"("messages":[{"role":"user","content":"hello world"}]})");
  Conversation metered = ConversationHost::with_meter(c, *meter);
  std::uint64_t message = (*meter)->count_text("hello world");
  std::uint64_t system = (*meter)->count_text("You are terse.");
  std::uint64_t tools = (*meter)->count_text(R"({"name":"Read","input_schema":{"type":"object"}})");
  EXPECT_EQ(metered.frame().fixed.tokens, system + tools);
  EXPECT_EQ(metered.sizes().tokens, message + system + tools);
}

TEST(Meter, AnUnknownKindNamesTheKnownOnes) {
  auto meter = make_meter(MeterSpec{"gpt5", "", ""});
  ASSERT_FALSE(meter);
  EXPECT_EQ(meter.error().message, "unknown meter \"gpt5\"; known: chars4, cl100k, o200k, claude-legacy, calibrated");
}

// A Claude Code log whose every call reports overhead + 1.3 × claude-legacy(prefix) + 11 per
// message, with one <synthetic> line, and (when `broken_at` > 0) a broken line. From turn
// `hidden_from` on (when ≥ 0), every call also carries 40,000 tokens of context the log does not
// show. With `chars_law`, prompts follow 0.3 × the messages' text chars instead of tokens, and
// every other question is digits (far more tokens per char than prose).
std::string synthetic_log(const std::string& session, const Tokenizer& claude, int turns, int overhead, int broken_at,
                          int hidden_from = -1, bool chars_law = false) {
  std::string out, parent;
  double prefix_tokens = 0;
  int messages = 0, line = 0;
  auto add = [&](boost::json::object o) {
    std::string uuid = session + "-" + std::to_string(++line);
    o["uuid"] = uuid;
    o["parentUuid"] = parent.empty() ? boost::json::value(nullptr) : boost::json::value(parent);
    o["sessionId"] = session;
    o["isSidechain"] = false;
    out += boost::json::serialize(o) + "\n";
    parent = uuid;
  };
  for (int t = 0; t < turns; ++t) {
    // Lengths vary from turn to turn, so tokens and messages are not proportional to each other.
    std::string question = "Question " + std::to_string(t) + " of " + session + ": why does the build of module " +
                           std::to_string(t * 7) + " fail on ARM?";
    for (int k = 0; k < (t * t + 3 * t) % 11; ++k) question += " It printed error E" + std::to_string(100 + k * t) + " again.";
    if (chars_law && t % 2 == 1)
      for (int k = 0; k < 40 + 13 * t; ++k) question += std::to_string((k * 7919 + t * 104729) % 1000) + ".";
    add({{"type", "user"}, {"message", {{"role", "user"}, {"content", question}}}});
    prefix_tokens += chars_law ? 0.3 / 1.3 * static_cast<double>(question.size()) : static_cast<double>(claude.count(question));
    ++messages;
    auto prompt = static_cast<std::int64_t>(overhead + std::llround(1.3 * prefix_tokens + 11.0 * messages)) +
                  (hidden_from >= 0 && t >= hidden_from ? 40000 : 0);
    std::string answer = "Answer " + std::to_string(t) + ": the linker script for module " + std::to_string(t) + " is wrong.";
    add({{"type", "assistant"},
         {"message", {{"id", session + "-msg" + std::to_string(t)}, {"model", t == 2 ? "<synthetic>" : "claude-sonnet-4-5"},
                      {"role", "assistant"}, {"content", boost::json::array{{{"type", "text"}, {"text", answer}}}},
                      {"usage", {{"input_tokens", 3}, {"cache_read_input_tokens", prompt - 1003},
                                 {"cache_creation_input_tokens", 1000}, {"output_tokens", 50}}}}}});
    prefix_tokens += chars_law ? 0.3 / 1.3 * static_cast<double>(answer.size()) : static_cast<double>(claude.count(answer));
    ++messages;
    if (t + 1 == broken_at) out += "{\"type\": \"user\", \"message\": {\"role\": \"user\", \"content\": \"cut\n";
  }
  return out;
}

// `compactor calibrate` over 8 synthetic sessions ("session-0" … "session-7", each log written
// by `log_of`), in a scratch folder `dir` that the caller removes.
test::CommandResult calibrate_sessions(const fs::path& dir, const std::function<std::string(int, const std::string&)>& log_of) {
  fs::create_directories(dir / "corpus");
  for (int s = 0; s < 8; ++s) {
    std::string id = "session-" + std::to_string(s);
    std::ofstream(dir / "corpus" / (id + ".jsonl")) << log_of(s, id);
  }
  return test::run_cli({"calibrate", "--corpus", (dir / "corpus").string(), "--out", (dir / "fit.yaml").string(), "--report",
                        (dir / "report.json").string()});
}

TEST(Calibrate, RecoversAKnownLawAndLeavesOutWhatItMust) {
  auto claude = Tokenizer::load(TokenizerKind::claude_legacy, COMPACTOR_METER_DATA_DIR);
  ASSERT_TRUE(claude) << claude.error().message;
  test::ScratchFolder scratch("calibrate");
  const fs::path& dir = scratch.path();
  auto r = calibrate_sessions(dir, [&](int s, const std::string& id) {
    return synthetic_log(id, **claude, 10, 15000 + 1000 * s, s == 0 ? 6 : 0);
  });
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto fit = read_calibration_fit((dir / "fit.yaml").string());
  ASSERT_TRUE(fit) << fit.error().message;
  ASSERT_TRUE(fit->families.count("sonnet"));
  EXPECT_NEAR(fit->families.at("sonnet").per_token, 1.3, 0.01);
  EXPECT_NEAR(fit->families.at("sonnet").per_message, 11.0, 0.5);

  boost::json::value report = boost::json::parse(test::read_file((dir / "report.json").string()));
  const auto& calls = report.at("calls").as_object();
  EXPECT_EQ(calls.at("recorded").as_int64(), 80);
  EXPECT_EQ(calls.at("synthetic_dropped").as_int64(), 8);
  EXPECT_EQ(calls.at("after_skipped_or_repaired_line").as_int64(), 4);  // session 0: turns 6 to 9, after the cut line
  std::map<std::string, double> median;
  for (const auto& row : report.at("held_out_error").as_array())
    median[std::string(row.at("meter").as_string())] = row.at("median").as_double();
  EXPECT_LT(median["calibrated"], 0.0005) << r.out;  // only rounding is left
  EXPECT_GT(median["claude-legacy"], 20 * median["calibrated"]) << r.out;
}

// Half the sessions go on after 40,000 tokens of context the log does not show: the robust fit
// still recovers the law, and names those calls as outliers (least squares would bend to them).
TEST(Calibrate, ARobustFitLeavesOutCallsAfterContextTheLogDoesNotShow) {
  auto claude = Tokenizer::load(TokenizerKind::claude_legacy, COMPACTOR_METER_DATA_DIR);
  ASSERT_TRUE(claude) << claude.error().message;
  test::ScratchFolder scratch("calibrate-hidden");
  const fs::path& dir = scratch.path();
  std::set<std::string> hidden;
  auto r = calibrate_sessions(dir, [&](int s, const std::string& id) {
    // Sessions are split by the parity of their id's hash: here the odd ones are held out, so
    // contaminate two of each half.
    const bool contaminated = s % 4 == 1 || s % 4 == 2;
    if (contaminated) hidden.insert(id);
    return synthetic_log(id, **claude, 10, 15000 + 1000 * s, 0, contaminated ? 5 : -1);
  });
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto fit = read_calibration_fit((dir / "fit.yaml").string());
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->families.at("sonnet").per_token, 1.3, 0.01) << r.out;
  EXPECT_NEAR(fit->families.at("sonnet").per_message, 11.0, 0.5) << r.out;
  boost::json::value report = boost::json::parse(test::read_file((dir / "report.json").string()));
  const auto& outliers = report.at("outliers").as_object();
  ASSERT_TRUE(outliers.contains("sonnet")) << r.out;
  EXPECT_GT(outliers.at("sonnet").at("calls").as_int64(), 0);
  for (const auto& id : outliers.at("sonnet").at("sessions").as_array())
    EXPECT_TRUE(hidden.count(std::string(id.as_string()))) << id << " has no hidden context";
  EXPECT_TRUE(report.at("refused").is_null());
  EXPECT_NE(r.out.find("outliers sonnet: "), std::string::npos) << r.out;
}

// Prompts that follow chars, not tokens: the fit over claude-legacy predicts worse than the same
// fit over chars/4, so calibrate refuses it (exit 1, the reason, no fit written).
TEST(Calibrate, RefusesAFitThatPredictsWorseThanCharsOverFour) {
  auto claude = Tokenizer::load(TokenizerKind::claude_legacy, COMPACTOR_METER_DATA_DIR);
  ASSERT_TRUE(claude) << claude.error().message;
  test::ScratchFolder scratch("calibrate-refuse");
  const fs::path& dir = scratch.path();
  auto r = calibrate_sessions(dir, [&](int, const std::string& id) { return synthetic_log(id, **claude, 10, 2000, 0, -1, true); });
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("compactor calibrate: refused: the calibrated fit's held-out median error ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is worse than the chars/4 fit's ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; no fit written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "fit.yaml"));
  boost::json::value report = boost::json::parse(test::read_file((dir / "report.json").string()));
  EXPECT_TRUE(report.at("refused").is_string());
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

TEST(CountCommand, PrintsWhatEachMeterCountsForMessagesAndForSystemAndTools) {
  test::ScratchFolder scratch("count");
  const fs::path& dir = scratch.path();
  std::string body = R"({"model":"m","system":"You are terse.","tools":[{"name":"Read","input_schema":{"type":"object"}}],)"
                     R"("messages":[{"role":"user","content":"hello world"},{"role":"assistant","content":"hi there"}]})";
  std::ofstream(dir / "body.json") << body;
  auto r = test::run_cli({"count", "--input", (dir / "body.json").string(), "--meter", "o200k", "--meter", "chars4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto o200k = make_meter(MeterSpec{"o200k", "", ""});
  ASSERT_TRUE(o200k);
  Conversation c = ConversationHost::with_meter(test::parse_or_die(body), *o200k);
  std::uint64_t fixed = c.frame().fixed.tokens;
  EXPECT_NE(r.out.find(fmt::format("  {:<14} {:>10} tokens + {} in system and tools\n", "o200k", c.sizes().tokens - fixed, fixed)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("chars4"), std::string::npos);

  auto per = test::run_cli({"count", "--input", (dir / "body.json").string(), "--meter", "o200k", "--per-message"});
  ASSERT_EQ(per.exit_code, 0) << per.err;
  // The messages, then what the summary line counts apart, with the same figure.
  EXPECT_EQ(per.out, fmt::format("{{\"message\":0,\"role\":\"user\",\"o200k\":{}}}\n{{\"message\":1,\"role\":\"assistant\",\"o200k\":{}}}\n"
                                 "{{\"fixed\":\"system and tools\",\"o200k\":{}}}\n",
                                 (*o200k)->count_text("hello world"), (*o200k)->count_text("hi there"), fixed));
  EXPECT_GT(fixed, (*o200k)->count_text("You are terse."));  // the tools count too
  // A messages array has no such line.
  std::ofstream(dir / "array.json") << R"([{"role":"user","content":"hello world"}])";
  auto array = test::run_cli({"count", "--input", (dir / "array.json").string(), "--meter", "o200k", "--per-message"});
  EXPECT_EQ(array.out, fmt::format("{{\"message\":0,\"role\":\"user\",\"o200k\":{}}}\n", (*o200k)->count_text("hello world")));
  auto bad = test::run_cli({"count", "--input", (dir / "body.json").string(), "--meter", "calibrated"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--fit"), std::string::npos) << bad.err;
  EXPECT_NE(r.out.find(": 2 messages, "), std::string::npos) << r.out;

  // A fit or a family that no meter would read is refused, not silently left out of the count.
  auto family = test::run_cli({"count", "--input", (dir / "body.json").string(), "--family", "opus"});
  EXPECT_EQ(family.exit_code, 2);
  EXPECT_EQ(family.err.substr(0, family.err.find('\n')), "compactor count: --family names a family of a fit: give --fit too");
  auto fit = test::run_cli({"count", "--input", (dir / "body.json").string(), "--meter", "o200k", "--fit",
                            std::string(COMPACTOR_CONFIGS_DIR) + "/fits/claude-code.yaml"});
  EXPECT_EQ(fit.exit_code, 2);
  EXPECT_EQ(fit.err.substr(0, fit.err.find('\n')), "compactor count: --fit is read by the calibrated meter only: add --meter calibrated");
  EXPECT_EQ(fit.out, "");
  auto not_a_fit = test::run_cli({"count", "--input", (dir / "body.json").string(), "--fit", std::string(COMPACTOR_CONFIGS_DIR) + "/default.yaml"});
  EXPECT_EQ(not_a_fit.exit_code, 2);
  EXPECT_NE(not_a_fit.err.find("default.yaml:9:1: base: missing: a calibration fit names its base meter"), std::string::npos) << not_a_fit.err;

  std::ofstream(dir / "one.json") << R"([{"role":"user","content":"hello"}])";
  auto one = test::run_cli({"count", "--input", (dir / "one.json").string(), "--meter", "chars4"});
  EXPECT_NE(one.out.find(": 1 message, "), std::string::npos) << one.out;
}

}  // namespace
}  // namespace compactor
