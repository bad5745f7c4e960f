#include "collectives/types.h"

#include <numeric>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

TEST(BalancedBlockTest, TilesTheRangeExactly) {
  for (size_t count : {0, 1, 7, 8, 9, 1000003}) {
    for (size_t blocks : {1, 2, 3, 8}) {
      size_t next = 0;
      for (size_t b = 0; b < blocks; ++b) {
        BlockRange r = BalancedBlock(count, blocks, b);
        EXPECT_EQ(next, r.begin);
        EXPECT_LE(r.size(), count / blocks + 1);
        next = r.end;
      }
      EXPECT_EQ(count, next);
    }
  }
}

TEST(ParseTest, NamesAndErrors) {
  EXPECT_EQ(DataType::kFloat32, *ParseDataType("fp32"));
  EXPECT_EQ(ReduceOp::kAvg, *ParseReduceOp("avg"));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseDataType("bf17").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseReduceOp("prod").status()));
}

TEST(ReduceTest, EachOpOnEachType) {
  const int32_t a[] = {1, -5, 7};
  const int32_t b[] = {2, -3, 7};
  int32_t d[3];
  Reduce(DataType::kInt32, ReduceOp::kMax, d, a, b, 3);
  EXPECT_EQ(2, d[0]);
  EXPECT_EQ(-3, d[1]);
  Reduce(DataType::kInt32, ReduceOp::kMin, d, a, b, 3);
  EXPECT_EQ(-5, d[1]);
  const double x[] = {0.5, 1.5};
  double y[] = {1.0, 2.0};
  Reduce(DataType::kFloat64, ReduceOp::kSum, y, x, y, 2);
  EXPECT_EQ(1.5, y[0]);
  EXPECT_EQ(3.5, y[1]);
  DivideInPlace(DataType::kFloat64, y, 2, 2);
  EXPECT_EQ(0.75, y[0]);
}

}  // namespace
}  // namespace gradsync
