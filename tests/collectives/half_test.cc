// 16-bit gradients on the wire (collectives/half.h): the conversions, bit
// for bit, and all-reductions in bfloat16 and fp16 over every algorithm and
// transport, exact on values the types hold and bitwise equal across ranks.
#include "collectives/half.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "collectives/types.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

TEST(HalfTest, EveryBFloat16_RoundTripsExactly) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = BFloat16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(f)))) << h;
      continue;
    }
    ASSERT_EQ(FloatToBFloat16(f), h) << "bits 0x" << std::hex << h;
  }
}

TEST(HalfTest, EveryFloat16_RoundTripsExactly) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = Float16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Float16ToFloat(FloatToFloat16(f)))) << h;
      continue;
    }
    ASSERT_EQ(FloatToFloat16(f), h) << "bits 0x" << std::hex << h;
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(Float16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(Float16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Float16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Float16ToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xc040), -3.0f);
}

TEST(HalfTest, RoundsToNearestTiesToEven) {
  // bfloat16 keeps 8 significant bits: 1 + 2^-8 is halfway between 1 and
  // 1 + 2^-7 and goes to the even 1; 1 + 3 * 2^-8 goes up to 1 + 2^-6.
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8))),
            1.0f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8))),
            1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8) +
                                            std::ldexp(1.0f, -20))),
            1.0f + std::ldexp(1.0f, -7));
  // fp16 keeps 11: the same at 2^-11, and in the subnormals at 2^-25.
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(Float16ToFloat(FloatToFloat16(1.0f + 3 * std::ldexp(1.0f, -11))),
            1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -25)), 0x0000);      // tie: 0
  EXPECT_EQ(FloatToFloat16(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5: 2
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(FloatToFloat16(-std::ldexp(1.0f, -24)), 0x8001);
  // Just below the smallest normal rounds up into it.
  EXPECT_EQ(FloatToFloat16(std::nextafter(std::ldexp(1.0f, -14), 0.0f)),
            0x0400);
}

TEST(HalfTest, Float16ClampsFiniteOverflow_KeepsInfinityAndNaN) {
  EXPECT_EQ(FloatToFloat16(65504.0f), kFloat16Max);
  EXPECT_EQ(FloatToFloat16(65519.0f), kFloat16Max);  // rounds down anyway
  EXPECT_EQ(FloatToFloat16(65520.0f), kFloat16Max);  // would round to inf
  EXPECT_EQ(FloatToFloat16(1e30f), kFloat16Max);
  EXPECT_EQ(FloatToFloat16(-1e30f), 0x8000 | kFloat16Max);
  EXPECT_EQ(FloatToFloat16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(
      Float16ToFloat(FloatToFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(
      FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HalfTest, ReduceSumsInFp32AndRoundsOnce) {
  // 256 + 1 is not a bfloat16 (257 needs 9 bits): the sum rounds to even,
  // 256; 256 + 3 rounds to 260.
  const uint16_t a[2] = {FloatToBFloat16(256), FloatToBFloat16(256)};
  const uint16_t b[2] = {FloatToBFloat16(1), FloatToBFloat16(3)};
  uint16_t out[2];
  Reduce(DataType::kBFloat16, ReduceOp::kSum, out, a, b, 2);
  EXPECT_EQ(BFloat16ToFloat(out[0]), 256.0f);
  EXPECT_EQ(BFloat16ToFloat(out[1]), 260.0f);
  const uint16_t c[1] = {FloatToFloat16(60000)};
  Reduce(DataType::kFloat16, ReduceOp::kSum, out, c, c, 1);
  EXPECT_EQ(out[0], kFloat16Max);  // clamped, not infinite
  EXPECT_EQ(DataTypeSize(DataType::kBFloat16), 2u);
  EXPECT_EQ(*ParseDataType("bf16"), DataType::kBFloat16);
  EXPECT_EQ(*ParseDataType("fp16"), DataType::kFloat16);
}

struct AllReduceCase {
  DataType type;
  int ranks;
  size_t count;
  AllReduceAlgorithm algorithm;
  Transport transport;
};

class HalfAllReduceTest : public ::testing::TestWithParam<AllReduceCase> {};

// Inputs (rank + 1) * InputPattern(i) <= 16 * N; their sums over N <= 8
// ranks are at most 576 and hold in fp16 exactly; in bfloat16 only those
// with 8 significant bits do, so bfloat16 runs 4 ranks (sums <= 160).
TEST_P(HalfAllReduceTest, ExactOnRepresentableValues_BitwiseEqualRanks) {
  const AllReduceCase c = GetParam();
  TcpOptions options = SmallPipelineOptions();
  options.algorithm = c.algorithm;
  options.transport = c.transport;
  RankGroup group(c.ranks, options);
  std::vector<std::vector<uint16_t>> data(c.ranks,
                                          std::vector<uint16_t>(c.count));
  const std::vector<absl::Status> statuses = group.Run([&](int rank) {
    FillInput(c.type, rank, data[rank].data(), c.count);
    return group.comm(rank).AllReduce(data[rank].data(), data[rank].data(),
                                      c.count, c.type, ReduceOp::kSum);
  });
  for (int r = 0; r < c.ranks; ++r) ASSERT_TRUE(statuses[r].ok()) << r;
  for (size_t i = 0; i < c.count; ++i) {
    const double expected = ReducedValue(ReduceOp::kSum, c.type, c.ranks, i);
    const float got = c.type == DataType::kBFloat16
                          ? BFloat16ToFloat(data[0][i])
                          : Float16ToFloat(data[0][i]);
    ASSERT_EQ(got, expected) << "at index " << i;
    for (int r = 1; r < c.ranks; ++r) {
      ASSERT_EQ(data[r][i], data[0][i]) << "rank " << r << " index " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    TypesAlgorithmsTransports, HalfAllReduceTest,
    ::testing::Values(
        AllReduceCase{DataType::kBFloat16, 4, 10001, AllReduceAlgorithm::kRing,
                      Transport::kTcp},
        AllReduceCase{DataType::kBFloat16, 4, 3, AllReduceAlgorithm::kRing,
                      Transport::kTcp},
        AllReduceCase{DataType::kBFloat16, 4, 4097,
                      AllReduceAlgorithm::kHalvingDoubling, Transport::kTcp},
        AllReduceCase{DataType::kBFloat16, 3, 10001, AllReduceAlgorithm::kRing,
                      Transport::kShm},
        AllReduceCase{DataType::kFloat16, 8, 10001, AllReduceAlgorithm::kRing,
                      Transport::kTcp},
        AllReduceCase{DataType::kFloat16, 5, 777,
                      AllReduceAlgorithm::kHalvingDoubling, Transport::kShm},
        AllReduceCase{DataType::kFloat16, 2, 1, AllReduceAlgorithm::kRing,
                      Transport::kTcp}));

}  // namespace
}  // namespace gradsync::testing
