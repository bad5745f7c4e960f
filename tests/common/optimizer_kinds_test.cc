// Properties every optimizer kind must have: cutting the update into
// slices, pool ranges or shuffled StepRange pieces changes no bit of the
// parameters or the state, and a state moved by Export/Import continues
// exactly.
#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/compute_pool.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "tests/common/optimizer_test_util.h"

namespace gradsync {
namespace {

using testing::ExpectBitwiseEqual;
using testing::ExpectSameStateBuffers;
using testing::Pattern;

class OptimizerKindTest : public ::testing::TestWithParam<OptimizerKind> {
 protected:
  OptimizerConfig MakeConfig() const {
    OptimizerConfig c;
    c.kind = GetParam();
    c.lr = 0.05;
    c.weight_decay = 0.01;
    c.momentum = 0.9;
    c.nesterov = GetParam() == OptimizerKind::kMomentum;
    return c;
  }
};

TEST_P(OptimizerKindTest, TwoHalvesEqualWhole) {
  const size_t n = 1001, k = 500;
  const OptimizerConfig c = MakeConfig();
  absl::StatusOr<Optimizer> whole = Optimizer::Create(c, n);
  absl::StatusOr<Optimizer> lo = Optimizer::Create(c, k);
  absl::StatusOr<Optimizer> hi = Optimizer::Create(c, n - k);
  ASSERT_TRUE(whole.ok() && lo.ok() && hi.ok());
  std::vector<float> p = Pattern(n, 7), q = p;
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> g = Pattern(n, 50 + step);
    ASSERT_TRUE(whole->Step(absl::MakeSpan(p), g).ok());
    ASSERT_TRUE(lo->Step(absl::MakeSpan(q).subspan(0, k),
                         absl::MakeConstSpan(g).subspan(0, k))
                    .ok());
    ASSERT_TRUE(hi->Step(absl::MakeSpan(q).subspan(k),
                         absl::MakeConstSpan(g).subspan(k))
                    .ok());
  }
  ExpectBitwiseEqual(p, q);
  const OptimizerState parts[] = {lo->ExportState(), hi->ExportState()};
  absl::StatusOr<OptimizerState> joined = ConcatOptimizerStates(parts);
  ASSERT_TRUE(joined.ok()) << joined.status();
  const OptimizerState all = whole->ExportState();
  EXPECT_EQ(joined->step, all.step);
  ExpectSameStateBuffers(all, *joined);
}

// A pool cuts the update into element ranges on several threads; the
// parameters and state must come out bitwise as without one.
TEST_P(OptimizerKindTest, PoolStepEqualsSerialStep) {
  const size_t n = 3 * Optimizer::kMinPartElements + 17;
  const OptimizerConfig c = MakeConfig();
  ComputePool pool(2);
  absl::StatusOr<Optimizer> serial = Optimizer::Create(c, n);
  absl::StatusOr<Optimizer> pooled = Optimizer::Create(c, n);
  ASSERT_TRUE(serial.ok() && pooled.ok());
  std::vector<float> p = Pattern(n, 9), q = p;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = Pattern(n, 70 + step);
    ASSERT_TRUE(serial->Step(absl::MakeSpan(p), g).ok());
    ASSERT_TRUE(pooled->Step(absl::MakeSpan(q), g, &pool).ok());
  }
  ExpectBitwiseEqual(p, q);
  EXPECT_EQ(pooled->step_count(), 3u);
  ExpectSameStateBuffers(serial->ExportState(), pooled->ExportState());
}

// A PS shard applies its step in blocks as it sums them (StepRange per
// block, from several threads, in no fixed order, then EndStep): bitwise
// the same parameters and state as one Step.
TEST_P(OptimizerKindTest, StepRangeInShuffledPiecesEqualsStep) {
  const size_t n = 10007;
  const OptimizerConfig c = MakeConfig();
  absl::StatusOr<Optimizer> whole = Optimizer::Create(c, n);
  absl::StatusOr<Optimizer> pieces = Optimizer::Create(c, n);
  ASSERT_TRUE(whole.ok() && pieces.ok());
  std::vector<float> p = Pattern(n, 3), q = p;
  std::mt19937 rng(17);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> g = Pattern(n, 90 + step);
    ASSERT_TRUE(whole->Step(absl::MakeSpan(p), g).ok());
    std::vector<std::pair<size_t, size_t>> ranges;  // [begin, end)
    std::uniform_int_distribution<size_t> len(1, 3000);
    for (size_t b = 0; b < n;) {
      const size_t e = std::min(n, b + len(rng));
      ranges.emplace_back(b, e);
      b = e;
    }
    std::shuffle(ranges.begin(), ranges.end(), rng);
    for (const auto& [b, e] : ranges) {
      // The gradient block lives elsewhere, as a shard's sums do.
      const std::vector<float> block(g.begin() + b, g.begin() + e);
      ASSERT_TRUE(
          pieces->StepRange(b, absl::MakeSpan(q).subspan(b, e - b), block)
              .ok());
    }
    EXPECT_EQ(pieces->step_count(), static_cast<uint64_t>(step));
    pieces->EndStep();
  }
  ExpectBitwiseEqual(p, q);
  EXPECT_EQ(pieces->step_count(), 4u);
  ExpectSameStateBuffers(whole->ExportState(), pieces->ExportState());
}

TEST_P(OptimizerKindTest, ExportImportContinuesIdentically) {
  const size_t n = 300;
  const OptimizerConfig c = MakeConfig();
  absl::StatusOr<Optimizer> a = Optimizer::Create(c, n);
  ASSERT_TRUE(a.ok());
  std::vector<float> p = Pattern(n, 3);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(a->Step(absl::MakeSpan(p), Pattern(n, 10 + step)).ok());
  }
  // Whole-vector import (a PS -> ring switch) ...
  absl::StatusOr<Optimizer> b = Optimizer::Create(c, n);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->ImportState(a->ExportState()).ok());
  EXPECT_EQ(b->step_count(), 3u);
  // ... and shard imports (a ring -> PS switch with shards [0,100),
  // [100,300)).
  absl::StatusOr<OptimizerState> s0 =
      SliceOptimizerState(a->ExportState(), 0, 100);
  absl::StatusOr<OptimizerState> s1 =
      SliceOptimizerState(a->ExportState(), 100, n);
  ASSERT_TRUE(s0.ok() && s1.ok());
  absl::StatusOr<Optimizer> shard0 = Optimizer::Create(c, 100);
  absl::StatusOr<Optimizer> shard1 = Optimizer::Create(c, n - 100);
  ASSERT_TRUE(shard0.ok() && shard1.ok());
  ASSERT_TRUE(shard0->ImportState(*s0).ok());
  ASSERT_TRUE(shard1->ImportState(*s1).ok());

  std::vector<float> pb = p, ps = p;
  for (int step = 3; step < 6; ++step) {
    const std::vector<float> g = Pattern(n, 10 + step);
    ASSERT_TRUE(a->Step(absl::MakeSpan(p), g).ok());
    ASSERT_TRUE(b->Step(absl::MakeSpan(pb), g).ok());
    ASSERT_TRUE(shard0
                    ->Step(absl::MakeSpan(ps).subspan(0, 100),
                           absl::MakeConstSpan(g).subspan(0, 100))
                    .ok());
    ASSERT_TRUE(shard1
                    ->Step(absl::MakeSpan(ps).subspan(100),
                           absl::MakeConstSpan(g).subspan(100))
                    .ok());
  }
  ExpectBitwiseEqual(p, pb);
  ExpectBitwiseEqual(p, ps);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, OptimizerKindTest,
                         ::testing::Values(OptimizerKind::kSgd,
                                           OptimizerKind::kMomentum,
                                           OptimizerKind::kAdam,
                                           OptimizerKind::kAdamW),
                         [](const auto& info) {
                           return std::string(OptimizerKindName(info.param));
                         });

}  // namespace
}  // namespace gradsync
