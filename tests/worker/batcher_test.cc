#include "worker/data/batcher.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

BatcherConfig Config(size_t batch, size_t ranks, size_t rank, bool drop_last,
                     uint64_t seed = 17) {
  BatcherConfig c;
  c.global_batch_size = batch;
  c.num_ranks = ranks;
  c.rank = rank;
  c.drop_last = drop_last;
  c.seed = seed;
  return c;
}

TEST(BatcherTest, ShareOf_IsBalancedAndContiguous) {
  for (size_t b : {0, 1, 3, 7, 10, 64, 130}) {
    for (size_t n : {1, 2, 3, 4, 7, 16}) {
      size_t next = 0, lo = b, hi = 0;
      for (size_t r = 0; r < n; ++r) {
        const ShareRange s = Batcher::ShareOf(b, n, r);
        ASSERT_EQ(s.begin, next) << "B=" << b << " N=" << n << " r=" << r;
        next = s.end;
        lo = std::min(lo, s.size());
        hi = std::max(hi, s.size());
      }
      EXPECT_EQ(next, b);
      EXPECT_LE(hi - std::min(lo, hi), 1u);
    }
  }
  EXPECT_EQ(Batcher::ShareOf(10, 4, 0).size(), 3u);
  EXPECT_EQ(Batcher::ShareOf(10, 4, 3).size(), 2u);
}

// The union over ranks, in rank order, is exactly the 1-rank batch.
TEST(BatcherTest, UnionOverRanks_EqualsSingleRankBatch) {
  for (bool drop_last : {true, false}) {
    for (size_t b : {1, 5, 64, 130}) {
      for (size_t n : {1, 2, 3, 4, 8}) {
        absl::StatusOr<Batcher> single =
            Batcher::Create(1000, Config(b, 1, 0, drop_last));
        ASSERT_TRUE(single.ok());
        std::vector<Batcher> ranks;
        for (size_t r = 0; r < n; ++r) {
          absl::StatusOr<Batcher> br =
              Batcher::Create(1000, Config(b, n, r, drop_last));
          ASSERT_TRUE(br.ok());
          ranks.push_back(std::move(*br));
        }
        for (uint64_t step : {0, 1, 7, 8, 15, 16, 40}) {
          absl::StatusOr<std::vector<size_t>> want = single->Indices(step);
          ASSERT_TRUE(want.ok());
          std::vector<size_t> got;
          for (Batcher& br : ranks) {
            absl::StatusOr<std::vector<size_t>> part = br.Indices(step);
            ASSERT_TRUE(part.ok());
            got.insert(got.end(), part->begin(), part->end());
          }
          ASSERT_EQ(got, *want) << "B=" << b << " N=" << n << " step=" << step
                                << " drop_last=" << drop_last;
          ASSERT_EQ(*ranks[0].GlobalIndices(step), *want);
        }
      }
    }
  }
}

TEST(BatcherTest, Deterministic_SameSeedSameOrder) {
  absl::StatusOr<Batcher> a = Batcher::Create(500, Config(32, 4, 1, true, 5));
  absl::StatusOr<Batcher> b = Batcher::Create(500, Config(32, 4, 1, true, 5));
  absl::StatusOr<Batcher> c = Batcher::Create(500, Config(32, 4, 1, true, 6));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // Visit steps out of order on one of them: results must not depend on
  // the cache.
  for (uint64_t step : {3, 40, 0, 15, 16, 3}) {
    EXPECT_EQ(*a->Indices(step), *b->Indices(step)) << "step " << step;
  }
  EXPECT_NE(*a->Indices(0), *c->Indices(0));
}

TEST(BatcherTest, DropLast_EpochsArePermutationsReshuffledEachEpoch) {
  const size_t n = 100, b = 30;  // 3 steps per epoch, 10 examples skipped
  absl::StatusOr<Batcher> batcher = Batcher::Create(n, Config(b, 1, 0, true));
  ASSERT_TRUE(batcher.ok());
  EXPECT_EQ(batcher->steps_per_epoch(), 3u);
  std::vector<std::vector<size_t>> epochs(3);
  for (uint64_t step = 0; step < 9; ++step) {
    EXPECT_EQ(*batcher->EpochOf(step), step / 3);
    absl::StatusOr<std::vector<size_t>> idx = batcher->Indices(step);
    ASSERT_TRUE(idx.ok());
    epochs[step / 3].insert(epochs[step / 3].end(), idx->begin(), idx->end());
  }
  for (const std::vector<size_t>& e : epochs) {
    ASSERT_EQ(e.size(), 90u);
    EXPECT_EQ(std::set<size_t>(e.begin(), e.end()).size(), 90u)
        << "no example repeats within an epoch";
    for (size_t i : e) ASSERT_LT(i, n);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
}

TEST(BatcherTest, Wrap_BatchesStraddleEpochsAndUseEveryExample) {
  const size_t n = 10, b = 4;
  absl::StatusOr<Batcher> batcher = Batcher::Create(n, Config(b, 1, 0, false));
  ASSERT_TRUE(batcher.ok());
  EXPECT_EQ(batcher->steps_per_epoch(), 3u);
  std::vector<size_t> stream;
  for (uint64_t step = 0; step < 5; ++step) {
    absl::StatusOr<std::vector<size_t>> idx = batcher->Indices(step);
    ASSERT_TRUE(idx.ok());
    stream.insert(stream.end(), idx->begin(), idx->end());
  }
  // Positions 0..9 are epoch 0, 10..19 epoch 1: each a full permutation.
  std::vector<size_t> e0(stream.begin(), stream.begin() + 10);
  std::vector<size_t> e1(stream.begin() + 10, stream.begin() + 20);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(e0[i], i);
    EXPECT_EQ(e1[i], i);
  }
  EXPECT_NE(std::vector<size_t>(stream.begin(), stream.begin() + 10),
            std::vector<size_t>(stream.begin() + 10, stream.begin() + 20));
  EXPECT_EQ(*batcher->EpochOf(2), 0u);  // positions 8..11 start in epoch 0
  EXPECT_EQ(*batcher->EpochOf(3), 1u);
  // A batch larger than the dataset is fine when wrapping.
  absl::StatusOr<Batcher> big = Batcher::Create(3, Config(8, 2, 1, false));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->Indices(0)->size(), 4u);
}

TEST(BatcherTest, Gather_CopiesTheShare) {
  Dataset d;
  d.num_examples = 20;
  d.feature_size = 2;
  d.num_classes = 10;
  for (size_t i = 0; i < 20; ++i) {
    d.features.push_back(static_cast<float>(i));
    d.features.push_back(-static_cast<float>(i));
    d.labels.push_back(static_cast<int32_t>(i % 10));
  }
  absl::StatusOr<Batcher> batcher = Batcher::Create(20, Config(7, 3, 2, true));
  ASSERT_TRUE(batcher.ok());
  Batch batch;
  ASSERT_TRUE(batcher->Gather(d, 1, &batch).ok());
  const std::vector<size_t> idx = *batcher->Indices(1);
  ASSERT_EQ(batch.size(), 2u);  // shares of 7 over 3: 3, 2, 2
  for (size_t k = 0; k < idx.size(); ++k) {
    EXPECT_EQ(batch.features[2 * k], static_cast<float>(idx[k]));
    EXPECT_EQ(batch.features[2 * k + 1], -static_cast<float>(idx[k]));
    EXPECT_EQ(batch.labels[k], static_cast<int32_t>(idx[k] % 10));
  }
  Dataset other = d;
  other.num_examples = 19;
  EXPECT_THAT(batcher->Gather(other, 1, &batch),
              StatusIs(absl::StatusCode::kInvalidArgument));
  const size_t bad[] = {20};
  EXPECT_THAT(GatherExamples(d, bad, &batch),
              StatusIs(absl::StatusCode::kOutOfRange));
}

TEST(BatcherTest, BadConfig_ReturnsInvalidArgument) {
  EXPECT_THAT(Batcher::Create(0, Config(1, 1, 0, true)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Batcher::Create(10, Config(0, 1, 0, true)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Batcher::Create(10, Config(2, 0, 0, true)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Batcher::Create(10, Config(2, 2, 2, true)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Batcher::Create(10, Config(11, 1, 0, true)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<Batcher> wrap = Batcher::Create(10, Config(4, 1, 0, false));
  ASSERT_TRUE(wrap.ok());
  EXPECT_THAT(wrap->Indices(UINT64_MAX / 2).status(),
              StatusIs(absl::StatusCode::kOutOfRange));
}

}  // namespace
}  // namespace gradsync
