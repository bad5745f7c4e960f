// 16-bit gradients on the wire (collectives/half.h): the conversions, bit
// for bit (the branch-free vectorized ones against the plain case-by-case
// code kept here as the reference), and all-reductions in bfloat16 and fp16
// over every algorithm and transport, exact on values the types hold and
// bitwise equal across ranks.
#include "collectives/half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "collectives/types.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

// The reference: the case-by-case conversions half.h had before it went
// branch-free, one branch per case.
uint16_t ReferenceFloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float ReferenceFloat16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    std::memcpy(&bits, &magnitude, sizeof(bits));
    bits |= sign;
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t ReferenceFloatToFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7bffu);
  if (magnitude >= 0x38800000u) {
    const uint32_t rounded =
        magnitude - 0x38000000u + 0x0fffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  float scaled;
  std::memcpy(&scaled, &magnitude, sizeof(scaled));
  scaled = scaled * 16777216.0f + 8388608.0f;
  uint32_t scaled_bits;
  std::memcpy(&scaled_bits, &scaled, sizeof(scaled_bits));
  return static_cast<uint16_t>(sign | (scaled_bits & 0x7fffffu));
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// Every float whose top 16 bits are any of the 65,536 patterns and whose low
// 16 are one of the tie and carry points of both roundings (bit 13 for fp16,
// bit 16 for bfloat16), then 2^22 more from a fixed LCG: 5.2 million.
std::vector<float> RoundingProbes() {
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff,
                           0x2000, 0x2fff, 0x3000, 0x3001, 0x7fff, 0x8000,
                           0x8001, 0xafff, 0xb000, 0xe000, 0xffff};
  std::vector<float> probes;
  for (uint32_t hi = 0; hi <= 0xffff; ++hi) {
    for (uint32_t lo : lows) {
      const uint32_t bits = (hi << 16) | lo;
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      probes.push_back(f);
    }
  }
  uint32_t x = 12345;
  for (int i = 0; i < (1 << 22); ++i) {
    x = x * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &x, sizeof(f));
    probes.push_back(f);
  }
  return probes;
}

TEST(HalfTest, BranchFreeConversions_MatchReferenceBitForBit) {
  const std::vector<float> probes = RoundingProbes();
  // The bulk (vectorized) kernels, from an odd offset so that the vector
  // loops' heads and tails run too.
  const size_t n = probes.size() - 3;
  std::vector<uint16_t> bf16(n), fp16(n);
  FloatsToBFloat16(probes.data() + 3, bf16.data(), n);
  FloatsToFloat16(probes.data() + 3, fp16.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const float f = probes[i + 3];
    ASSERT_EQ(FloatToBFloat16(f), ReferenceFloatToBFloat16(f))
        << "bits 0x" << std::hex << Bits(f);
    ASSERT_EQ(bf16[i], ReferenceFloatToBFloat16(f))
        << "bulk, bits 0x" << std::hex << Bits(f);
    ASSERT_EQ(FloatToFloat16(f), ReferenceFloatToFloat16(f))
        << "bits 0x" << std::hex << Bits(f);
    ASSERT_EQ(fp16[i], ReferenceFloatToFloat16(f))
        << "bulk, bits 0x" << std::hex << Bits(f);
  }
  std::vector<uint16_t> every(0x10000);
  for (uint32_t h = 0; h <= 0xffff; ++h) every[h] = static_cast<uint16_t>(h);
  std::vector<float> widened(every.size());
  Float16ToFloats(every.data(), widened.data(), every.size());
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t x = static_cast<uint16_t>(h);
    ASSERT_EQ(Bits(Float16ToFloat(x)), Bits(ReferenceFloat16ToFloat(x))) << h;
    ASSERT_EQ(Bits(widened[h]), Bits(ReferenceFloat16ToFloat(x))) << h;
  }
  BFloat16ToFloats(every.data(), widened.data(), every.size());
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    ASSERT_EQ(Bits(widened[h]), h << 16) << h;
  }
}

// The fused kernels, on every pair of (a from all 65,536 patterns, b from a
// spread of them), disjoint and in place, against widen + add + round with
// the reference.
TEST(HalfTest, FusedAdd_MatchesReferenceInPlaceAndDisjoint) {
  std::vector<uint16_t> a(0x10000);
  for (uint32_t h = 0; h <= 0xffff; ++h) a[h] = static_cast<uint16_t>(h);
  for (uint32_t shift : {1u, 7u, 0x3c00u, 0x8001u, 0xfff0u}) {
    std::vector<uint16_t> b(a.size());
    for (size_t i = 0; i < b.size(); ++i) {
      b[i] = static_cast<uint16_t>(a[i] * 40503u + shift);
    }
    std::vector<uint16_t> bf(a.size()), fp(a.size());
    AddBFloat16(a.data(), b.data(), bf.data(), a.size());
    AddFloat16(a.data(), b.data(), fp.data(), a.size());
    std::vector<uint16_t> bf_in_place = a, fp_in_place = a;
    AddBFloat16(bf_in_place.data(), b.data(), bf_in_place.data(), a.size());
    AddFloat16(fp_in_place.data(), b.data(), fp_in_place.data(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const uint16_t want_bf = ReferenceFloatToBFloat16(BFloat16ToFloat(a[i]) +
                                                        BFloat16ToFloat(b[i]));
      const uint16_t want_fp = ReferenceFloatToFloat16(
          ReferenceFloat16ToFloat(a[i]) + ReferenceFloat16ToFloat(b[i]));
      // NaN + NaN is a NaN, but IEEE 754 leaves whose payload: the compiler
      // may add in either order. (The ring's all-gather still hands every
      // rank the same bits.)
      if (std::isnan(BFloat16ToFloat(a[i])) &&
          std::isnan(BFloat16ToFloat(b[i]))) {
        ASSERT_TRUE(std::isnan(BFloat16ToFloat(bf[i]))) << i;
        ASSERT_TRUE(std::isnan(BFloat16ToFloat(bf_in_place[i]))) << i;
      } else {
        ASSERT_EQ(bf[i], want_bf) << "at index " << i << " shift " << shift;
        ASSERT_EQ(bf_in_place[i], want_bf) << "at index " << i;
      }
      if (std::isnan(Float16ToFloat(a[i])) &&
          std::isnan(Float16ToFloat(b[i]))) {
        ASSERT_TRUE(std::isnan(Float16ToFloat(fp[i]))) << i;
        ASSERT_TRUE(std::isnan(Float16ToFloat(fp_in_place[i]))) << i;
      } else {
        ASSERT_EQ(fp[i], want_fp) << "at index " << i << " shift " << shift;
        ASSERT_EQ(fp_in_place[i], want_fp) << "at index " << i;
      }
    }
  }
}

// A partial overlap (dst one element past a) runs in order, as a plain
// loop would: each sum feeds the next.
TEST(HalfTest, FusedAdd_PartialOverlapRunsInOrder) {
  std::vector<uint16_t> buf(9, FloatToBFloat16(1.0f));
  const std::vector<uint16_t> ones(8, FloatToBFloat16(1.0f));
  AddBFloat16(buf.data(), ones.data(), buf.data() + 1, 8);
  for (size_t i = 0; i < buf.size(); ++i) {
    EXPECT_EQ(BFloat16ToFloat(buf[i]), static_cast<float>(i + 1)) << i;
  }
}

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
