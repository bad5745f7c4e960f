// PsShard in synchronous mode, with plain calls: exact sums, rank-order
// determinism, the optimizer shared with ring mode, every error case
// leaving the shard as it was, waits that name the missing ranks, stats.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/shard/ps_shard.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::MakeShard;
using ::gradsync::testing::PullParams;
using ::gradsync::testing::PushGradient;
using ::gradsync::testing::ShardConfig;
using ::gradsync::testing::Snapshot;
using ::gradsync::testing::Soon;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rank r's integer gradient: element i is (i % 5) + 2r + 1 - 3*step.
std::vector<float> IntegerGradient(size_t n, int rank, int64_t step) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] = static_cast<float>(static_cast<int64_t>(i % 5) + 2 * rank + 1 -
                              3 * step);
  }
  return g;
}

TEST(PsShardSyncTest, PushPull_IntegerGradientsSgdLr1_ParametersExact) {
  constexpr int kWorkers = 3;
  constexpr size_t kSize = 1001;
  std::vector<float> expected(kSize);
  for (size_t i = 0; i < kSize; ++i) expected[i] = static_cast<float>(i);
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(kWorkers, 0, kSize), expected);
  ASSERT_NE(shard, nullptr);

  for (int64_t step = 0; step < 4; ++step) {
    for (int r = 0; r < kWorkers; ++r) {
      ASSERT_THAT(
          PushGradient(*shard, r, step, IntegerGradient(kSize, r, step)),
          IsOk());
    }
    // Mean over ranks of (i%5) + 2r + 1 - 3 step is (i%5) + 3 - 3 step.
    for (size_t i = 0; i < kSize; ++i) {
      expected[i] -=
          static_cast<float>(static_cast<int64_t>(i % 5) + 3 - 3 * step);
    }
    for (int r = 0; r < kWorkers; ++r) {
      absl::StatusOr<std::vector<float>> params =
          PullParams(*shard, r, step + 1);
      ASSERT_THAT(params, IsOk());
      for (size_t i = 0; i < kSize; ++i) {
        ASSERT_EQ(expected[i], (*params)[i])
            << "at index " << i << ", step " << step << ", rank " << r;
      }
    }
  }
  EXPECT_EQ(shard->Stats().version, 4);
  EXPECT_EQ(shard->Stats().updates, 4u);
}

// Gradients with fractions, pushed in every arrival order from threads: the
// result must be bitwise ((g0 + g1) + g2) + g3) / 4 applied by SGD.
TEST(PsShardSyncTest, PushPull_AnyArrivalOrder_SumsInRankOrderBitwise) {
  constexpr int kWorkers = 4;
  constexpr size_t kSize = 5000;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  std::vector<std::vector<float>> grads(kWorkers, std::vector<float>(kSize));
  for (auto& g : grads) {
    for (float& x : g) x = dist(rng);
  }
  std::vector<float> expected(kSize);
  for (size_t i = 0; i < kSize; ++i) {
    float sum = grads[0][i];
    for (int r = 1; r < kWorkers; ++r) sum += grads[r][i];
    expected[i] = 0.0f - 0.5f * (sum / static_cast<float>(kWorkers));
  }

  std::vector<int> order = {0, 1, 2, 3};
  int permutations = 0;
  do {
    std::shared_ptr<PsShard> shard =
        MakeShard(ShardConfig(kWorkers, 0, kSize, UpdateMode::kSync, 0.5),
                  std::vector<float>(kSize, 0.0f));
    ASSERT_NE(shard, nullptr);
    for (int r : order) {
      ASSERT_THAT(PushGradient(*shard, r, 0, grads[r], 333), IsOk());
    }
    absl::StatusOr<std::vector<float>> params = PullParams(*shard, 0, 1);
    ASSERT_THAT(params, IsOk());
    for (size_t i = 0; i < kSize; ++i) {
      ASSERT_EQ(expected[i], (*params)[i]) << "at index " << i;
    }
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(permutations, 24);

  // And concurrently, with ranks racing each other.
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(kWorkers, 0, kSize, UpdateMode::kSync, 0.5),
                std::vector<float>(kSize, 0.0f));
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<std::vector<float>>> pulled(kWorkers);
  for (int r = 0; r < kWorkers; ++r) {
    threads.emplace_back([&, r]() {
      absl::Status pushed = PushGradient(*shard, r, 0, grads[r], 100 + r);
      pulled[r] = pushed.ok() ? PullParams(*shard, r, 1) : pushed;
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(pulled[r], IsOk());
    EXPECT_EQ(*pulled[r], expected) << "rank " << r;
  }
}

// The shard runs the ranks' optimizer: on its slice, momentum and Adam give
// bitwise what one Optimizer over the whole vector gives on that slice.
TEST(PsShardSyncTest, PushPull_MomentumAndAdam_MatchWholeVectorOptimizer) {
  constexpr size_t kTotal = 300;
  constexpr size_t kBegin = 100, kEnd = 217;
  for (OptimizerKind kind : {OptimizerKind::kMomentum, OptimizerKind::kAdam}) {
    PsShardConfig config = ShardConfig(2, kBegin, kEnd);
    config.optimizer.kind = kind;
    config.optimizer.lr = 0.01;
    std::vector<float> whole(kTotal);
    for (size_t i = 0; i < kTotal; ++i) whole[i] = 0.01f * i;
    std::shared_ptr<PsShard> shard = MakeShard(
        config,
        std::vector<float>(whole.begin() + kBegin, whole.begin() + kEnd));
    ASSERT_NE(shard, nullptr);
    absl::StatusOr<Optimizer> reference =
        Optimizer::Create(config.optimizer, kTotal);
    ASSERT_THAT(reference, IsOk());
    for (int64_t step = 0; step < 5; ++step) {
      std::vector<float> g0(kTotal), g1(kTotal), mean(kTotal);
      for (size_t i = 0; i < kTotal; ++i) {
        g0[i] = 0.1f * static_cast<float>((i * 7 + step) % 13) - 0.6f;
        g1[i] = 0.05f * static_cast<float>((i * 3 + step) % 11) - 0.2f;
        mean[i] = (g0[i] + g1[i]) / 2.0f;
      }
      ASSERT_THAT(reference->Step(absl::MakeSpan(whole), mean), IsOk());
      ASSERT_THAT(
          PushGradient(*shard, 0, step,
                       absl::MakeConstSpan(g0).subspan(kBegin, kEnd - kBegin)),
          IsOk());
      ASSERT_THAT(
          PushGradient(*shard, 1, step,
                       absl::MakeConstSpan(g1).subspan(kBegin, kEnd - kBegin)),
          IsOk());
    }
    absl::StatusOr<std::vector<float>> params = PullParams(*shard, 0, 5);
    ASSERT_THAT(params, IsOk());
    EXPECT_EQ(*params,
              std::vector<float>(whole.begin() + kBegin, whole.begin() + kEnd))
        << OptimizerKindName(kind);
  }
}

class PsShardSyncErrorTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 3;
  static constexpr size_t kSize = 64;

  void SetUp() override {
    shard_ = MakeShard(ShardConfig(kWorkers, 0, kSize),
                       std::vector<float>(kSize, 1.0f));
    ASSERT_NE(shard_, nullptr);
    // One full step, so that the shard is at step 1 with history.
    for (int r = 0; r < kWorkers; ++r) {
      ASSERT_THAT(PushGradient(*shard_, r, 0, Grad(r)), IsOk());
    }
    before_ = Snapshot(*shard_);
  }

  std::vector<float> Grad(int r) { return std::vector<float>(kSize, r + 1); }

  std::shared_ptr<PsShard> shard_;
  testing::ShardSnapshot before_;
};

TEST_F(PsShardSyncErrorTest, BeginPush_RankNotInJob_PermissionDenied) {
  for (int rank : {-1, kWorkers, 100}) {
    EXPECT_THAT(shard_->BeginPush(rank, 1, Soon()),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         HasSubstr("not in the job")))
        << rank;
    EXPECT_THAT(shard_->Pull(rank, 1, Soon()),
                StatusIs(absl::StatusCode::kPermissionDenied));
  }
  EXPECT_TRUE(Snapshot(*shard_) == before_);
}

TEST_F(PsShardSyncErrorTest, BeginPush_UnknownStep_FailedPreconditionOrDup) {
  EXPECT_THAT(shard_->BeginPush(0, 5, Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("next step is 1")));
  // A step already applied is a duplicate of that rank's earlier push.
  EXPECT_THAT(shard_->BeginPush(0, 0, Soon()),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("already pushed step 0")));
  EXPECT_TRUE(Snapshot(*shard_) == before_);
}

TEST_F(PsShardSyncErrorTest, Push_WrongSize_InvalidArgumentNothingChanges) {
  // Too many bytes.
  absl::StatusOr<PsShard::Push> push = shard_->BeginPush(1, 1, Soon());
  ASSERT_THAT(push, IsOk());
  std::vector<float> too_long(kSize + 1, 9.0f);
  EXPECT_THAT(push->Append(AsBytes(too_long)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("more than its gradient")));
  // Too few: the commit is refused.
  std::vector<float> too_short(kSize - 1, 9.0f);
  ASSERT_THAT(push->Append(AsBytes(too_short)), IsOk());
  EXPECT_THAT(
      shard_->Commit(std::move(*push), Soon()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("incomplete")));
  EXPECT_TRUE(Snapshot(*shard_) == before_);
  // The rank may push the step again, and the step then completes.
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(PushGradient(*shard_, r, 1, Grad(r)), IsOk());
  }
  absl::StatusOr<std::vector<float>> params = PullParams(*shard_, 0, 2);
  ASSERT_THAT(params, IsOk());
  EXPECT_EQ((*params)[0], 1.0f - 2.0f - 2.0f);
}

TEST_F(PsShardSyncErrorTest, Push_Duplicate_AlreadyExistsStagedGradientKept) {
  ASSERT_THAT(PushGradient(*shard_, 0, 1, Grad(0)), IsOk());
  // Committed already.
  EXPECT_THAT(PushGradient(*shard_, 0, 1, std::vector<float>(kSize, 100.0f)),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("rank 0 already pushed step 1")));
  // In progress on another thread.
  absl::StatusOr<PsShard::Push> first = shard_->BeginPush(1, 1, Soon());
  ASSERT_THAT(first, IsOk());
  EXPECT_THAT(
      shard_->BeginPush(1, 1, Soon()),
      StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already pushing")));
  ASSERT_THAT(first->Append(AsBytes(Grad(1))), IsOk());
  ASSERT_THAT(shard_->Commit(std::move(*first), Soon()), IsOk());
  EXPECT_THAT(shard_->Stats().rank_steps, ElementsAre(2, 2, 1));
  ASSERT_THAT(PushGradient(*shard_, 2, 1, Grad(2)), IsOk());
  // The duplicates did not touch rank 0's staged gradient: 1 - 2 - 2.
  absl::StatusOr<std::vector<float>> params = PullParams(*shard_, 2, 2);
  ASSERT_THAT(params, IsOk());
  EXPECT_EQ(*params, std::vector<float>(kSize, -3.0f));
}

TEST_F(PsShardSyncErrorTest, Pull_StepNotPushedOrReplaced_FailedPrecondition) {
  // Rank 0 asks for step 2 without pushing step 1.
  EXPECT_THAT(shard_->Pull(0, 2, Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has not pushed it")));
  EXPECT_THAT(shard_->Pull(0, 0, Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("already replaced")));
  EXPECT_TRUE(Snapshot(*shard_) == before_);
}

TEST_F(PsShardSyncErrorTest, Pull_MissingRanks_DeadlineExceededNamesThem) {
  ASSERT_THAT(PushGradient(*shard_, 1, 1, Grad(1)), IsOk());
  EXPECT_THAT(shard_->Pull(1, 2, absl::Now() + absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("step 1 is not applied"),
                             HasSubstr("ranks 0, 2 have not pushed it"),
                             HasSubstr("ranks 1 have"))));
  EXPECT_EQ(shard_->Stats().queue_depth, 1);
}

TEST_F(PsShardSyncErrorTest, Release_WakesWaitersWithAborted) {
  ASSERT_THAT(PushGradient(*shard_, 0, 1, Grad(0)), IsOk());
  absl::Status waited;
  std::thread waiter([&]() { waited = shard_->Pull(0, 2, Soon()).status(); });
  absl::SleepFor(absl::Milliseconds(50));
  shard_->Release();
  waiter.join();
  EXPECT_THAT(waited,
              StatusIs(absl::StatusCode::kAborted, HasSubstr("released")));
  EXPECT_THAT(shard_->BeginPush(1, 1, Soon()),
              StatusIs(absl::StatusCode::kAborted));
}

TEST(PsShardSyncTest, CreateAwaitingSeed_PushBeforeSeed_FailedPrecondition) {
  absl::StatusOr<std::shared_ptr<PsShard>> shard =
      PsShard::CreateAwaitingSeed(ShardConfig(2, 0, 8));
  ASSERT_THAT(shard, IsOk());
  EXPECT_THAT(
      (*shard)->BeginPush(0, 0, Soon()),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("SeedShard")));
  EXPECT_THAT((*shard)->ExportState(Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(PsShardSyncTest, Create_BadConfig_InvalidArgument) {
  PsShardConfig config = ShardConfig(0, 0, 8);
  EXPECT_THAT(
      PsShard::Create(config, std::vector<float>(8)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_workers")));
  EXPECT_THAT(PsShard::Create(ShardConfig(1, 4, 4), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(PsShard::Create(ShardConfig(1, 0, 8), std::vector<float>(7)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("7")));
  config = ShardConfig(1, 0, 8);
  config.optimizer.lr = -1;
  EXPECT_THAT(PsShard::Create(config, std::vector<float>(8)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(PsShardSyncTest, Stats_CountBytesWaitsAndOptimizerTime) {
  constexpr size_t kSize = 1 << 16;
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(2, 0, kSize), std::vector<float>(kSize, 0.0f));
  ASSERT_NE(shard, nullptr);
  const std::vector<float> g(kSize, 1.0f);
  ASSERT_THAT(PushGradient(*shard, 0, 0, g, 4096), IsOk());
  absl::SleepFor(absl::Milliseconds(30));
  ASSERT_THAT(PushGradient(*shard, 1, 0, g, 4096), IsOk());
  ASSERT_THAT(PullParams(*shard, 0, 1), IsOk());
  ASSERT_THAT(PullParams(*shard, 1, 1), IsOk());
  const PsShardStats stats = shard->Stats();
  EXPECT_EQ(stats.bytes_in, 2 * kSize * sizeof(float));
  EXPECT_EQ(stats.bytes_out, 2 * kSize * sizeof(float));
  EXPECT_EQ(stats.pushes, 2u);
  EXPECT_EQ(stats.pulls, 2u);
  EXPECT_EQ(stats.updates, 1u);
  EXPECT_GE(stats.wait_last_worker, absl::Milliseconds(30));
  EXPECT_EQ(stats.wait_last_worker, stats.last_wait_last_worker);
  EXPECT_GT(stats.apply_time, absl::ZeroDuration());
  EXPECT_EQ(stats.max_queue_depth, 2);
  EXPECT_EQ(stats.queue_depth, 0);
  EXPECT_THAT(stats.rank_steps, ElementsAre(1, 1));
}

}  // namespace
}  // namespace gradsync
