// The calibrated meter's robust fit on points made from a known law: it recovers the law, names
// exactly the points that break it, and says when the points determine nothing.
#include "meter/robust_fit.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace compactor {
namespace {

// y = 1.3·x + 11·n for every point, where x and n vary independently.
struct Law {
  std::vector<double> x, n, y;
  void add(double xi, double ni, double extra = 0) {
    x.push_back(xi);
    n.push_back(ni);
    y.push_back(1.3 * xi + 11.0 * ni + extra);
  }
};

TEST(RobustFit, RecoversTheLawAndNamesThePointsThatBreakIt) {
  Law law;
  for (int i = 0; i < 40; ++i) law.add(100.0 + 37.0 * (i % 23), 1.0 + (i % 5), i % 2 == 0 ? 0.4 : -0.4);  // rounding
  // Four steps into 40,000 tokens of context the points do not show.
  const std::vector<std::size_t> broken = {3, 17, 28, 35};
  for (std::size_t i : broken) law.y[i] += 40000;
  RobustFit fit = robust_fit(law.x, law.n, law.y);
  ASSERT_TRUE(fit.ok);
  EXPECT_NEAR(fit.a, 1.3, 0.005);
  EXPECT_NEAR(fit.b, 11.0, 0.5);
  ASSERT_EQ(fit.outlier.size(), 40u);
  for (std::size_t i = 0; i < 40; ++i) {
    bool expected = i == 3 || i == 17 || i == 28 || i == 35;
    EXPECT_EQ(fit.outlier[i], expected) << "point " << i;
  }
}

TEST(RobustFit, CollinearInputsFitTheFirstCoefficientAlone) {
  Law law;
  for (int i = 1; i <= 10; ++i) law.add(10.0 * i, 2.0 * i);  // n = x / 5: y = (1.3 + 11 / 5)·x = 3.5·x
  RobustFit fit = robust_fit(law.x, law.n, law.y);
  ASSERT_TRUE(fit.ok);
  EXPECT_NEAR(fit.a, 3.5, 1e-9);
  EXPECT_EQ(fit.b, 0.0);
}

TEST(RobustFit, PointsThatDetermineNothingGiveNoFit) {
  EXPECT_FALSE(robust_fit({}, {}, {}).ok);
  EXPECT_FALSE(robust_fit({0, 0}, {0, 0}, {5, 7}).ok);
}

}  // namespace
}  // namespace compactor
