#include "cli/bench/verifiable.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// Element bytes of a buffer of `count` elements of `type`.
std::vector<std::byte> Buffer(DataType type, size_t count) {
  return std::vector<std::byte>(count * DataTypeSize(type));
}

void* At(std::vector<std::byte>& buf, DataType type, size_t index) {
  return buf.data() + index * DataTypeSize(type);
}

// What a correct backend computes, with the library's own kernels: every
// rank's input reduced in rank order, then divided for avg.
std::vector<std::byte> ReferenceResult(const VerifySpec& spec) {
  const DataType type = spec.type;
  const size_t n = spec.param_count;
  const size_t ranks = spec.ranks;
  std::vector<std::byte> out;
  switch (spec.collective) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter: {
      const size_t total =
          spec.collective == Collective::kAllReduce ? n : n * ranks;
      std::vector<std::byte> acc = Buffer(type, total);
      std::vector<std::byte> input = Buffer(type, total);
      FillInput(type, 0, acc.data(), total);
      for (int r = 1; r < spec.ranks; ++r) {
        FillInput(type, r, input.data(), total);
        Reduce(type, spec.op, acc.data(), acc.data(), input.data(), total);
      }
      if (spec.op == ReduceOp::kAvg) {
        DivideInPlace(type, acc.data(), total, spec.ranks);
      }
      const size_t first =
          spec.collective == Collective::kAllReduce ? 0 : spec.rank * n;
      out = Buffer(type, n);
      std::memcpy(out.data(), At(acc, type, first), n * DataTypeSize(type));
      return out;
    }
    case Collective::kAllGather:
      out = Buffer(type, n * ranks);
      for (int r = 0; r < spec.ranks; ++r) {
        FillInput(type, r, At(out, type, r * n), n);
      }
      return out;
    case Collective::kBroadcast:
      out = Buffer(type, n);
      FillInput(type, spec.root, out.data(), n);
      return out;
  }
  return out;
}

size_t RecvCount(const VerifySpec& spec) {
  return spec.collective == Collective::kAllGather
             ? spec.param_count * spec.ranks
             : spec.param_count;
}

TEST(VerifiableTest, PatternStaysInOneToSixteenAndVaries) {
  bool seen[17] = {};
  for (size_t i = 0; i < 100000; ++i) {
    const uint32_t p = InputPattern(i);
    ASSERT_GE(p, 1u);
    ASSERT_LE(p, 16u);
    seen[p] = true;
  }
  for (int p = 1; p <= 16; ++p) EXPECT_TRUE(seen[p]) << p;
  EXPECT_EQ(InputValue(2, 5), 3.0 * InputPattern(5));
}

TEST(VerifiableTest, ClosedFormMatchesTheReferenceReduction) {
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter,
                       Collective::kAllGather, Collective::kBroadcast}) {
    for (DataType type :
         {DataType::kFloat32, DataType::kFloat64, DataType::kInt32}) {
      for (ReduceOp op :
           {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
        for (int ranks : {1, 2, 3, 4, 7}) {
          for (size_t count :
               {size_t{0}, size_t{1}, size_t{13}, size_t{1000}}) {
            VerifySpec spec;
            spec.collective = c;
            spec.type = type;
            spec.op = op;
            spec.ranks = ranks;
            spec.rank = ranks - 1;
            spec.root = ranks / 2;
            spec.param_count = count;
            std::vector<std::byte> got = ReferenceResult(spec);
            EXPECT_EQ(CountWrong(spec, got.data(), RecvCount(spec)), 0)
                << CollectiveName(c) << " " << DataTypeName(type) << " "
                << ReduceOpName(op) << " ranks " << ranks << " count " << count;
          }
        }
      }
    }
  }
}

TEST(VerifiableTest, ExactForTheLargestWorld) {
  VerifySpec spec;
  spec.type = DataType::kFloat32;
  spec.ranks = kMaxExactRanks;
  spec.param_count = 64;
  std::vector<std::byte> got = ReferenceResult(spec);
  EXPECT_EQ(CountWrong(spec, got.data(), spec.param_count), 0);
}

TEST(VerifiableTest, OneWrongElementIsCountedOnce) {
  for (DataType type :
       {DataType::kFloat32, DataType::kFloat64, DataType::kInt32}) {
    VerifySpec spec;
    spec.collective = Collective::kAllGather;
    spec.type = type;
    spec.ranks = 3;
    spec.rank = 1;
    spec.param_count = 100;
    std::vector<std::byte> got = ReferenceResult(spec);
    ASSERT_EQ(CountWrong(spec, got.data(), 300), 0);
    // Rank 2's element 7 replaced by rank 1's.
    FillInput(type, 1, At(got, type, 207), 1);
    EXPECT_EQ(CountWrong(spec, got.data(), 300), 1) << DataTypeName(type);
  }
}

TEST(VerifiableTest, ShiftedBlockIsCaught) {
  VerifySpec spec;
  spec.collective = Collective::kReduceScatter;
  spec.ranks = 4;
  spec.rank = 2;
  spec.param_count = 700;  // a multiple of 7: a short period would miss it
  std::vector<std::byte> got = ReferenceResult(spec);
  spec.rank = 1;  // rank 1 holding rank 2's block
  EXPECT_GT(CountWrong(spec, got.data(), 700), 600);
}

TEST(VerifiableTest, PoisonAndNanAreWrong) {
  VerifySpec spec;
  spec.ranks = 2;
  spec.param_count = 10;
  std::vector<float> got(10);
  FillPoison(DataType::kFloat32, got.data(), got.size());
  EXPECT_EQ(CountWrong(spec, got.data(), got.size()), 10);
  std::vector<std::byte> right = ReferenceResult(spec);
  std::memcpy(got.data(), right.data(), right.size());
  got[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(CountWrong(spec, got.data(), got.size()), 1);
  spec.tolerance = 1e-3;
  EXPECT_EQ(CountWrong(spec, got.data(), got.size()), 1);
}

TEST(VerifiableTest, ToleranceAcceptsPreScaledAvgOnly) {
  VerifySpec spec;
  spec.op = ReduceOp::kAvg;
  spec.ranks = 3;
  spec.param_count = 1000;
  // What a backend that multiplies each input by 1/3 before summing gets.
  std::vector<float> got(1000);
  for (size_t i = 0; i < got.size(); ++i) {
    float sum = 0;
    for (int r = 0; r < 3; ++r) {
      sum += static_cast<float>(InputValue(r, i)) * (1.0f / 3);
    }
    got[i] = sum;
  }
  spec.tolerance = PreScaledAvgTolerance(DataType::kFloat32, ReduceOp::kAvg, 3);
  EXPECT_GT(spec.tolerance, 0.0);
  EXPECT_EQ(CountWrong(spec, got.data(), got.size()), 0);
  got[5] *= 1.001f;
  EXPECT_EQ(CountWrong(spec, got.data(), got.size()), 1);
  EXPECT_EQ(PreScaledAvgTolerance(DataType::kInt32, ReduceOp::kAvg, 3), 0.0);
  EXPECT_EQ(PreScaledAvgTolerance(DataType::kFloat32, ReduceOp::kSum, 3), 0.0);
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
