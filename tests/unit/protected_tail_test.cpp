#include "support/test_support.hpp"

#include "compactor/protected_tail.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

// u a u a a u : index 3 and 4 are one assistant turn.
const char* kConv = R"([{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"u"},
{"role":"assistant","content":"b1"},{"role":"assistant","content":"b2"},{"role":"user","content":"v"}])";

TEST(ProtectedTail, StartsAtTheAssistantTurnOfTheKthNewestExchange) {
  auto c = test::parse_or_die(kConv);
  EXPECT_EQ(compute_protected_tail(c, 1).begin, 3u);  // the split turn starts at 3, never at 4
  EXPECT_EQ(compute_protected_tail(c, 2).begin, 1u);
  EXPECT_EQ(compute_protected_tail(c, 5).begin, 1u);  // fewer exchanges: all but the first message
  EXPECT_EQ(compute_protected_tail(c, 0).begin, c.size());
  EXPECT_EQ(compute_protected_tail(c, 1).length(c), 3u);
}

}  // namespace
}  // namespace compactor
