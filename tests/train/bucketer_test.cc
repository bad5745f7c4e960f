// Bucketer: buckets tile the flat gradient exactly, in reverse order, and
// are launched in index order as backward reports ranges.
#include "worker/train/bucketer.h"

#include <cstddef>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

// Checks that the buckets tile [0, n) from the end, each <= cap elements.
void ExpectTiling(const Bucketer& b, size_t n, size_t cap) {
  size_t end = n;
  for (size_t k = 0; k < b.buckets().size(); ++k) {
    const Bucket& bucket = b.buckets()[k];
    EXPECT_EQ(bucket.index, k);
    EXPECT_EQ(bucket.end, end) << "bucket " << k;
    EXPECT_GT(bucket.size(), 0u) << "bucket " << k;
    EXPECT_LE(bucket.size(), cap) << "bucket " << k;
    // Only the last bucket (lowest addresses) may be short.
    if (k + 1 < b.buckets().size()) {
      EXPECT_EQ(bucket.size(), cap);
    }
    end = bucket.begin;
  }
  EXPECT_EQ(end, 0u);
}

TEST(BucketerTest, Create_TilesBufferFromTheEnd) {
  for (size_t n : {0, 1, 3, 4, 5, 100, 1000, 1001}) {
    for (size_t bytes : {4, 8, 12, 16, 400, 4000, 1 << 20}) {
      absl::StatusOr<Bucketer> b = Bucketer::Create(n, bytes);
      ASSERT_THAT(b, IsOk());
      const size_t cap = bytes / 4;
      EXPECT_EQ(b->bucket_elements(), cap);
      EXPECT_EQ(b->buckets().size(), (n + cap - 1) / cap)
          << "n " << n << " bytes " << bytes;
      ExpectTiling(*b, n, cap);
    }
  }
}

TEST(BucketerTest, Create_RoundsBytesDownToWholeElements) {
  absl::StatusOr<Bucketer> b = Bucketer::Create(10, 11);  // 2.75 floats
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(b->bucket_elements(), 2u);
  ExpectTiling(*b, 10, 2);
}

TEST(BucketerTest, Create_BucketSmallerThanElement_ReturnsInvalidArgument) {
  EXPECT_THAT(Bucketer::Create(10, 3),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("smaller than one element")));
  EXPECT_THAT(Bucketer::Create(10, 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Bucketer::Create(10, 8, 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(BucketerTest, EmptyBuffer_IsLaunchedAtOnce) {
  absl::StatusOr<Bucketer> b = Bucketer::Create(0, 16);
  ASSERT_THAT(b, IsOk());
  EXPECT_TRUE(b->AllLaunched());
  EXPECT_THAT(b->MarkReady(0, 0, nullptr), IsOk());
}

// Layer-sized ranges from the end: buckets launch as soon as they are
// covered, and a bucket may span layers.
TEST(BucketerTest, MarkReady_LayerRanges_LaunchInOrderWhenComplete) {
  // Layers of 30, 50, 20 elements: [0,30) [30,80) [80,100); buckets of 25.
  absl::StatusOr<Bucketer> b = Bucketer::Create(100, 25 * 4);
  ASSERT_THAT(b, IsOk());
  std::vector<std::pair<size_t, size_t>> launched;
  auto record = [&](const Bucket& bucket) {
    launched.emplace_back(bucket.begin, bucket.end);
  };
  ASSERT_THAT(b->MarkReady(80, 100, record), IsOk());
  EXPECT_TRUE(launched.empty());  // bucket 0 is [75, 100)
  ASSERT_THAT(b->MarkReady(30, 80, record), IsOk());
  EXPECT_THAT(launched, ::testing::ElementsAre(std::make_pair(75, 100),
                                               std::make_pair(50, 75)));
  EXPECT_FALSE(b->AllLaunched());
  ASSERT_THAT(b->MarkReady(0, 30, record), IsOk());
  EXPECT_THAT(launched, ::testing::ElementsAre(
                            std::make_pair(75, 100), std::make_pair(50, 75),
                            std::make_pair(25, 50), std::make_pair(0, 25)));
  EXPECT_TRUE(b->AllLaunched());
  EXPECT_EQ(b->num_launched(), 4u);
}

TEST(BucketerTest, MarkReady_OutOfOrder_HoldsBackLaterBuckets) {
  absl::StatusOr<Bucketer> b = Bucketer::Create(40, 10 * 4);
  ASSERT_THAT(b, IsOk());
  std::vector<size_t> launched;
  auto record = [&](const Bucket& bucket) { launched.push_back(bucket.index); };
  ASSERT_THAT(b->MarkReady(0, 20, record), IsOk());  // buckets 2, 3
  EXPECT_TRUE(launched.empty());
  ASSERT_THAT(b->MarkReady(30, 40, record), IsOk());  // bucket 0
  EXPECT_THAT(launched, ::testing::ElementsAre(0));
  ASSERT_THAT(b->MarkReady(20, 30, record), IsOk());  // bucket 1
  EXPECT_THAT(launched, ::testing::ElementsAre(0, 1, 2, 3));
}

TEST(BucketerTest, Reset_StartsANewPass) {
  absl::StatusOr<Bucketer> b = Bucketer::Create(8, 16);
  ASSERT_THAT(b, IsOk());
  int launched = 0;
  auto count = [&](const Bucket&) { ++launched; };
  for (int pass = 0; pass < 3; ++pass) {
    b->Reset();
    EXPECT_EQ(b->num_launched(), 0u);
    ASSERT_THAT(b->MarkReady(0, 8, count), IsOk());
    EXPECT_TRUE(b->AllLaunched());
  }
  EXPECT_EQ(launched, 6);
}

TEST(BucketerTest, MarkReady_Overlap_ReturnsInvalidArgumentAndRecordsNothing) {
  absl::StatusOr<Bucketer> b = Bucketer::Create(100, 40);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(b->MarkReady(50, 100, nullptr), IsOk());
  EXPECT_THAT(b->MarkReady(40, 60, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("overlaps the range [50, 100)")));
  EXPECT_THAT(b->MarkReady(60, 70, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(b->MarkReady(0, 51, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // The rejected ranges left no trace: [0, 50) still completes the pass.
  ASSERT_THAT(b->MarkReady(0, 50, nullptr), IsOk());
  EXPECT_TRUE(b->AllLaunched());
}

TEST(BucketerTest, MarkReady_OutsideBuffer_ReturnsInvalidArgument) {
  absl::StatusOr<Bucketer> b = Bucketer::Create(10, 8);
  ASSERT_THAT(b, IsOk());
  EXPECT_THAT(b->MarkReady(5, 11, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not inside the flat gradient [0, 10)")));
  EXPECT_THAT(b->MarkReady(6, 5, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(b->num_launched(), 0u);
}

}  // namespace
}  // namespace gradsync
