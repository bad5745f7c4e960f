// PsShard beyond synchronous steps: asynchronous updates, stale synchronous
// parallel (the staleness bound, from the recorded step numbers; a slow
// rank holding fast ones back), and the state hand-over of mode switches.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
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

using ::gradsync::testing::Eventually;
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

TEST(PsShardAsyncTest, Push_AppliedAtOnceUnaveraged_PullNeedsNoOthers) {
  std::shared_ptr<PsShard> shard = MakeShard(
      ShardConfig(3, 0, 4, UpdateMode::kAsync), std::vector<float>(4, 10.0f));
  ASSERT_NE(shard, nullptr);
  ASSERT_THAT(PushGradient(*shard, 1, 0, std::vector<float>(4, 2.0f)), IsOk());
  absl::StatusOr<std::vector<float>> params = PullParams(*shard, 1, 1);
  ASSERT_THAT(params, IsOk());
  EXPECT_EQ(*params, std::vector<float>(4, 8.0f));
  // Rank 1 runs ahead; rank 0 is still at its first step.
  ASSERT_THAT(PushGradient(*shard, 1, 1, std::vector<float>(4, 1.0f)), IsOk());
  ASSERT_THAT(PushGradient(*shard, 0, 0, std::vector<float>(4, 3.0f)), IsOk());
  params = PullParams(*shard, 0, 1);
  ASSERT_THAT(params, IsOk());
  EXPECT_EQ(*params, std::vector<float>(4, 4.0f));
  const PsShardStats stats = shard->Stats();
  EXPECT_EQ(stats.version, 3);
  EXPECT_EQ(stats.updates, 3u);
  EXPECT_THAT(stats.rank_steps, ElementsAre(1, 2, 0));
  // Duplicates and skipped steps are refused per rank.
  EXPECT_THAT(shard->BeginPush(1, 1, Soon()),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(shard->BeginPush(2, 1, Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("next step is 0")));
}

// Ranks of different speeds push 12 steps each under SSP with bound 1;
// replaying the recorded pushes in order, no push ever ran more than one
// step ahead of the slowest rank, and the fast ranks were held back.
TEST(PsShardAsyncTest, StaleSync_FastAndSlowRanks_BoundNeverExceeded) {
  constexpr int kWorkers = 3;
  constexpr int kSteps = 12;
  constexpr int kStaleness = 1;
  PsShardConfig config = ShardConfig(kWorkers, 0, 16, UpdateMode::kStaleSync);
  config.staleness = kStaleness;
  std::shared_ptr<PsShard> shard =
      MakeShard(config, std::vector<float>(16, 0.0f));
  ASSERT_NE(shard, nullptr);
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(kWorkers);
  for (int r = 0; r < kWorkers; ++r) {
    threads.emplace_back([&, r]() {
      for (int step = 0; step < kSteps && results[r].ok(); ++step) {
        if (r == kWorkers - 1) absl::SleepFor(absl::Milliseconds(5));
        results[r] = PushGradient(*shard, r, step, std::vector<float>(16, 1));
        if (results[r].ok()) results[r] = PullParams(*shard, r, step).status();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorkers; ++r) ASSERT_THAT(results[r], IsOk()) << r;

  const std::vector<PushRecord> history = shard->History();
  ASSERT_EQ(history.size(), static_cast<size_t>(kWorkers * kSteps));
  std::vector<int64_t> next(kWorkers, 0);
  int max_ahead = 0;
  for (const PushRecord& record : history) {
    ASSERT_EQ(record.step, next[record.rank]) << "rank " << record.rank;
    const int64_t slowest = *std::min_element(next.begin(), next.end());
    EXPECT_LE(record.step - slowest, kStaleness)
        << "rank " << record.rank << " pushed step " << record.step;
    EXPECT_LE(record.step - record.slowest_step, kStaleness);
    max_ahead = std::max<int>(max_ahead, record.step - record.slowest_step);
    ++next[record.rank];
  }
  EXPECT_EQ(max_ahead, kStaleness);  // the fast ranks did run ahead
  EXPECT_GT(shard->Stats().staleness_wait, absl::ZeroDuration());
  EXPECT_EQ(shard->Stats().updates, static_cast<uint64_t>(kWorkers * kSteps));
}

TEST(PsShardAsyncTest, StaleSync_SlowRankStalls_FastPushTimesOutNamingIt) {
  PsShardConfig config = ShardConfig(3, 0, 4, UpdateMode::kStaleSync);
  config.staleness = 2;
  std::shared_ptr<PsShard> shard =
      MakeShard(config, std::vector<float>(4, 0.0f));
  ASSERT_NE(shard, nullptr);
  for (int step = 0; step < 3; ++step) {
    for (int r : {0, 1}) {
      ASSERT_THAT(PushGradient(*shard, r, step, std::vector<float>(4, 1)),
                  IsOk());
    }
  }
  const testing::ShardSnapshot before = Snapshot(*shard);
  // Rank 2 never pushed: ranks 0, 1 at step 3 are 3 > 2 steps ahead.
  EXPECT_THAT(
      shard->BeginPush(0, 3, absl::Now() + absl::Milliseconds(50)),
      StatusIs(absl::StatusCode::kDeadlineExceeded,
               AllOf(HasSubstr("waiting for rank 2"), HasSubstr("at step 0"),
                     HasSubstr("staleness bound 2"))));
  EXPECT_TRUE(Snapshot(*shard) == before);
  // Once rank 2 pushes step 0, a waiting push of rank 0 goes through.
  absl::Status fast;
  std::atomic<bool> returned{false};
  std::thread waiter([&]() {
    fast = PushGradient(*shard, 0, 3, std::vector<float>(4, 1));
    returned = true;
  });
  // Held back by the bound, not merely not yet started.
  EXPECT_TRUE(
      Eventually([&]() { return shard->Stats().staleness_waiters == 1; }));
  EXPECT_FALSE(returned.load());
  EXPECT_THAT(shard->Stats().rank_steps, ElementsAre(3, 3, 0));
  EXPECT_THAT(PushGradient(*shard, 2, 0, std::vector<float>(4, 1)), IsOk());
  waiter.join();
  EXPECT_THAT(fast, IsOk());
  EXPECT_THAT(shard->Stats().rank_steps, ElementsAre(4, 3, 1));
  EXPECT_EQ(shard->Stats().staleness_waiters, 0);
}

TEST(PsShardStateTest, ExportImport_RoundTrip_ContinuesBitwiseIdentically) {
  constexpr size_t kSize = 257;
  PsShardConfig config = ShardConfig(2, 0, kSize);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.lr = 0.01;
  std::vector<float> init(kSize);
  for (size_t i = 0; i < kSize; ++i) init[i] = 0.001f * i;
  std::shared_ptr<PsShard> a = MakeShard(config, init);
  ASSERT_NE(a, nullptr);
  auto grad = [&](int rank, int64_t step) {
    std::vector<float> g(kSize);
    for (size_t i = 0; i < kSize; ++i) {
      g[i] = 0.01f * static_cast<float>((i + 3 * rank + 5 * step) % 17) - 0.08f;
    }
    return g;
  };
  for (int64_t step = 0; step < 3; ++step) {
    for (int r = 0; r < 2; ++r) {
      ASSERT_THAT(PushGradient(*a, r, step, grad(r, step)), IsOk());
    }
  }
  absl::StatusOr<ParameterState> exported = a->ExportState(Soon());
  ASSERT_THAT(exported, IsOk());
  EXPECT_EQ(exported->step, 3);
  EXPECT_EQ(exported->optimizer.step, 3u);
  ASSERT_EQ(exported->optimizer.buffers.size(), 2u);

  config.first_step = 0;
  absl::StatusOr<std::shared_ptr<PsShard>> b =
      PsShard::CreateAwaitingSeed(config);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT((*b)->ImportState(*exported, Soon()), IsOk());
  EXPECT_THAT((*b)->Stats().rank_steps, ElementsAre(3, 3));
  for (int64_t step = 3; step < 6; ++step) {
    for (int r = 0; r < 2; ++r) {
      ASSERT_THAT(PushGradient(*a, r, step, grad(r, step)), IsOk());
      ASSERT_THAT(PushGradient(**b, r, step, grad(r, step)), IsOk());
    }
  }
  absl::StatusOr<ParameterState> from_a = a->ExportState(Soon());
  absl::StatusOr<ParameterState> from_b = (*b)->ExportState(Soon());
  ASSERT_THAT(from_a, IsOk());
  ASSERT_THAT(from_b, IsOk());
  EXPECT_EQ(from_a->step, 6);
  EXPECT_EQ(from_b->step, 6);
  EXPECT_EQ(from_a->params, from_b->params);
  EXPECT_EQ(from_a->optimizer.buffers, from_b->optimizer.buffers);
  EXPECT_EQ(from_a->optimizer.step, from_b->optimizer.step);
}

TEST(PsShardStateTest, StateChanges_MidStepOrMismatched_RefusedUnchanged) {
  constexpr size_t kSize = 8;
  PsShardConfig config = ShardConfig(2, 0, kSize);
  config.optimizer.kind = OptimizerKind::kMomentum;
  std::shared_ptr<PsShard> shard =
      MakeShard(config, std::vector<float>(kSize, 1.0f));
  ASSERT_NE(shard, nullptr);
  absl::StatusOr<ParameterState> good = shard->ExportState(Soon());
  ASSERT_THAT(good, IsOk());
  const testing::ShardSnapshot before = Snapshot(*shard);

  ParameterState wrong_size = *good;
  wrong_size.params.pop_back();
  EXPECT_THAT(shard->ImportState(wrong_size, Soon()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("holds 7 parameters")));
  ParameterState wrong_kind = *good;
  wrong_kind.optimizer.kind = OptimizerKind::kAdam;
  EXPECT_THAT(shard->ImportState(wrong_kind, Soon()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("adam")));
  EXPECT_TRUE(Snapshot(*shard) == before);

  // Mid-step: rank 0 pushed step 0, rank 1 did not.
  ASSERT_THAT(PushGradient(*shard, 0, 0, std::vector<float>(kSize, 1)), IsOk());
  EXPECT_THAT(shard->AcquireState(Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("middle of step 0"),
                             HasSubstr("ranks 1 have not pushed it"))));
  EXPECT_THAT(shard->ImportState(*good, Soon()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("ranks 0 are pushing step 0")));
  ASSERT_THAT(PushGradient(*shard, 1, 0, std::vector<float>(kSize, 3)), IsOk());
  absl::StatusOr<std::vector<float>> params = PullParams(*shard, 0, 1);
  ASSERT_THAT(params, IsOk());
  // Momentum's first step: buf = mean gradient 2; p = 1 - lr * 2.
  EXPECT_EQ(*params, std::vector<float>(kSize, 1.0f - 2.0f));
}

// A view (a pull still sending) holds the next update back until dropped.
TEST(PsShardStateTest, View_HeldByReader_UpdateWaitsForIt) {
  std::shared_ptr<PsShard> shard = MakeShard(
      ShardConfig(1, 0, 4, UpdateMode::kAsync), std::vector<float>(4, 0.0f));
  ASSERT_NE(shard, nullptr);
  absl::StatusOr<ShardViewRef> view = shard->Pull(0, 0, Soon());
  ASSERT_THAT(view, IsOk());
  EXPECT_THAT(PushGradient(*shard, 0, 0, std::vector<float>(4, 1.0f), 4,
                           absl::Now() + absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("1 parameter readers")));
  EXPECT_EQ((*view)->params[0], 0.0f);
  std::atomic<bool> applied{false};
  std::thread writer([&]() {
    EXPECT_THAT(PushGradient(*shard, 0, 0, std::vector<float>(4, 1.0f)),
                IsOk());
    applied = true;
  });
  // The writer's push is committed and waits to be applied (the queue
  // holds it) while the view lives.
  EXPECT_TRUE(Eventually([&]() { return shard->Stats().queue_depth == 1; }));
  EXPECT_FALSE(applied.load());
  EXPECT_EQ((*view)->params[0], 0.0f);
  EXPECT_EQ(shard->Stats().updates, 0u);
  view->reset();
  writer.join();
  EXPECT_TRUE(applied.load());
  EXPECT_EQ((*PullParams(*shard, 0, 1))[0], -1.0f);
}

}  // namespace
}  // namespace gradsync
