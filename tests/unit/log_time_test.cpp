// The logs' timestamps, to the millisecond; figures from the civil calendar by hand: 2026-01-05 is
// 20,458 days after 1970-01-01 (56 years with 14 leap days: 56 × 365 + 14 = 20,454, plus 4), so
// 10:22:33.123Z is 20,458 × 86,400,000 + 37,353,123 = 1,767,608,553,123 ms.
#include "import/log_time.hpp"

#include <gtest/gtest.h>

namespace compactor {
namespace {

TEST(LogTime, IsoTimesAreMillisecondsSinceTheEpoch) {
  EXPECT_EQ(parse_log_time("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_log_time("2026-01-05T10:22:33.123Z"), 1767608553123);
  EXPECT_EQ(parse_log_time("2026-01-05T10:22:33.123456Z"), 1767608553123);  // microseconds: their milliseconds
  EXPECT_EQ(parse_log_time("2026-01-05T10:22:33Z"), 1767608553000);
  EXPECT_EQ(parse_log_time("2026-01-05T12:22:33.123+02:00"), 1767608553123);  // the same instant two hours east
  EXPECT_EQ(parse_log_time("2026-01-05T05:22:33.123-05:00"), 1767608553123);
  EXPECT_EQ(parse_log_time("2026-01-05T10:22:33.123"), 1767608553123);  // no zone: UTC
}

TEST(LogTime, AnythingElseIsNoTime) {
  EXPECT_FALSE(parse_log_time(""));
  EXPECT_FALSE(parse_log_time("2026-01-05"));
  EXPECT_FALSE(parse_log_time("2026-02-30T10:00:00Z"));  // no such day
  EXPECT_FALSE(parse_log_time("2026-01-05T24:00:00Z"));
  EXPECT_FALSE(parse_log_time("2026-01-05T10:22:33Zjunk"));
  EXPECT_FALSE(parse_log_time("1767608553123"));
}

}  // namespace
}  // namespace compactor
