#include "support/test_support.hpp"

#include "model/active_request.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

TEST(ActiveRequest, NewestUserTextThatIsNotRuntimeText) {
  auto c = test::parse_or_die(R"([{"role":"user","content":"first ask"},
    {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"R","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out"},{"type":"text","text":"<system-reminder>x</system-reminder>"}]},
    {"role":"assistant","content":"done"},
    {"role":"user","content":[{"type":"text","text":"second ask"},{"type":"text","text":"[Request interrupted by user]"}]},
    {"role":"assistant","content":"ok"},
    {"role":"user","content":"<command-name>/clear</command-name>"},
    {"role":"assistant","content":"cleared"},
    {"role":"user","content":"<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>\nRead the output file to retrieve the result."}])");
  auto r = find_active_request(c);
  EXPECT_EQ(r.text, "second ask");
  EXPECT_EQ(r.message_index, 4u);
}

TEST(ActiveRequest, AShortAnswerBringsTheSubstantivePromptBeforeIt) {
  // "yes" (under 40 chars) answers the question; "pwd" too; the newest prompt of 40 chars or more
  // before them is the request the work is for, quoted first.
  auto c = test::parse_or_die(R"([{"role":"user","content":"port the tokenizer to C++20 and keep every golden test green"},
    {"role":"assistant","content":"Shall I start with the lexer?"},
    {"role":"user","content":"yes"},
    {"role":"assistant","content":"Which folder?"},
    {"role":"user","content":"pwd"}])");
  auto r = find_active_request(c);
  EXPECT_EQ(r.text, "pwd");
  EXPECT_EQ(r.texts, (std::vector<std::string>{"port the tokenizer to C++20 and keep every golden test green", "pwd"}));
  // A substantive newest prompt stands alone.
  auto alone = test::parse_or_die(R"([{"role":"user","content":"yes"},{"role":"assistant","content":"ok"},
    {"role":"user","content":"now rename every module after the folder it lives in"}])");
  EXPECT_EQ(find_active_request(alone).texts, (std::vector<std::string>{"now rename every module after the folder it lives in"}));
}

TEST(ActiveRequest, NoneWhenThereIsNoUserText) {
  auto c = test::parse_or_die(R"([{"role":"user","content":"<command-name>/x</command-name>"}])");
  EXPECT_TRUE(find_active_request(c).text.empty());
}

}  // namespace
}  // namespace compactor
