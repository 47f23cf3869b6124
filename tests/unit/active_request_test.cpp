#include "support/test_support.hpp"

#include "compactor/active_request.hpp"

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
    {"role":"user","content":"<command-name>/clear</command-name>"}])");
  auto r = find_active_request(c);
  EXPECT_EQ(r.text, "second ask");
  EXPECT_EQ(r.message_index, 4u);
}

TEST(ActiveRequest, NoneWhenThereIsNoUserText) {
  auto c = test::parse_or_die(R"([{"role":"user","content":"<command-name>/x</command-name>"}])");
  EXPECT_TRUE(find_active_request(c).text.empty());
}

}  // namespace
}  // namespace compactor
