// The session rule compares, keys and stores histories without the breakpoints a client moves
// from call to call: `cache_control` on a block of a message's content, or on a block of a tool
// result's content. A `cache_control` anywhere else is not a breakpoint: inside a tool's `input`
// it is the user's data, and stays byte for byte in what the pipeline gets and what is keyed.
#include "support/test_support.hpp"

#include "session/continuation.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

constexpr const char* kInputHolds = R"({"type":"tool_use","id":"t1","name":"set_config","input":{"cache_control":{"type":"ephemeral"},"ttl":"1h"}})";

std::string body(bool breakpoint, const std::string& input_value = R"({"type":"ephemeral"})") {
  std::string use = std::string(kInputHolds);
  use.replace(use.find(R"({"type":"ephemeral"})"), 20, input_value);
  return std::string(R"({"model":"m","max_tokens":8,"messages":[)") +
         R"({"role":"user","content":[{"type":"text","text":"set it")" + (breakpoint ? R"(,"cache_control":{"type":"ephemeral"})" : "") + "}]}," +
         R"({"role":"assistant","content":[)" + use + "]}," +
         R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"done")" +
         (breakpoint ? R"(,"cache_control":{"type":"ephemeral"})" : "") + "}]}]}]}";
}

TEST(Continuation, ABreakpointIsCutFromBlocksButACacheControlInAToolsInputStays) {
  Continuation with(test::parse_or_die(body(true)));
  const Conversation input = with.input(nullptr);
  EXPECT_EQ(input[0].raw(), R"({"role":"user","content":[{"type":"text","text":"set it"}]})");
  EXPECT_EQ(input[1].raw(), std::string(R"({"role":"assistant","content":[)") + kInputHolds + "]}");
  EXPECT_EQ(input[2].raw(), R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"done"}]}]})");
}

TEST(Continuation, KeysIgnoreMovedBreakpointsButNotTheUsersData) {
  const auto plain = Continuation(test::parse_or_die(body(false))).prefix_keys("anthropic_messages");
  EXPECT_EQ(Continuation(test::parse_or_die(body(true))).prefix_keys("anthropic_messages"), plain);
  const auto other_input = Continuation(test::parse_or_die(body(false, R"({"type":"persistent"})"))).prefix_keys("anthropic_messages");
  EXPECT_EQ(other_input[0], plain[0]);
  EXPECT_NE(other_input[1], plain[1]) << "a tool input that differs only in its own cache_control was keyed as the same";
}

TEST(Continuation, WithoutBreakpointsCutsEachWithItsComma) {
  EXPECT_EQ(without_breakpoints(R"({"role":"system","content":[{"cache_control":{"type":"ephemeral"}, "type":"text","text":"a"}]})"),
            R"({"role":"system","content":[{"type":"text","text":"a"}]})");
  EXPECT_EQ(without_breakpoints("{\"role\":\"user\",\n \"content\":[{\"type\":\"text\",\n  \"cache_control\":{}}]}"),
            "{\"role\":\"user\",\n \"content\":[{\"type\":\"text\"}]}");
  const std::string text_only = R"({"role":"user","content":"cache_control"})";
  EXPECT_EQ(without_breakpoints(text_only), text_only);
}

}  // namespace
}  // namespace compactor
