// PsShard's step control with plain calls: scalar sums in rank order, the
// switch decisions of sync and async/SSP shards (exact values, and the
// property that every rank learns a decision (E, S) before it would start
// step S, under many concurrent epochs), sum_gradients, descending pushes
// (bitwise the same as ascending, zero-copy pieces included) and the drain
// of AcquireState(step).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
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
using ::gradsync::testing::StatsSnapshot;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// BeginPush with step control + Append + Commit.
[[nodiscard]] absl::Status PushWith(PsShard& shard, int rank, int64_t step,
                                    absl::Span<const float> grads,
                                    PushOptions options) {
  absl::StatusOr<PsShard::Push> push =
      shard.BeginPush(rank, step, Soon(), std::move(options));
  if (!push.ok()) return push.status();
  absl::Status status = push->Append(AsBytes(grads));
  if (!status.ok()) return status;
  return shard.Commit(std::move(*push), Soon());
}

PushOptions Control(std::vector<double> scalars, int64_t epoch = 0) {
  PushOptions options;
  options.scalars = std::move(scalars);
  options.switch_epoch = epoch;
  return options;
}

// The view's step control for `rank`'s pull of `step`.
[[nodiscard]] absl::StatusOr<ShardViewRef> PullView(PsShard& shard, int rank,
                                                    int64_t step) {
  return shard.Pull(rank, step, Soon());
}

TEST(PsShardControlTest, Sync_Scalars_SummedInRankOrderForEveryRank) {
  constexpr int kWorkers = 3;
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(kWorkers, 0, 4), std::vector<float>(4));
  ASSERT_NE(shard, nullptr);
  // Rank order gives ((1e16 + 1) - 1e16) = 0; any other order may give 1.
  const std::vector<std::vector<double>> scalars = {
      {1e16, 0.5}, {1.0, 0.25}, {-1e16, 2.0}};
  const std::vector<float> grads(4, 1.0f);
  for (int r : {2, 0, 1}) {
    ASSERT_THAT(PushWith(*shard, r, 0, grads, Control(scalars[r])), IsOk());
  }
  const double first = (0.0 + 1e16 + 1.0) + -1e16;
  for (int r = 0; r < kWorkers; ++r) {
    absl::StatusOr<ShardViewRef> view = PullView(*shard, r, 1);
    ASSERT_THAT(view, IsOk());
    EXPECT_THAT((*view)->scalar_sums, ElementsAre(first, 2.75)) << "rank " << r;
  }
  // A step without scalars replaces the sums with none.
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(PushWith(*shard, r, 1, grads, PushOptions()), IsOk());
  }
  absl::StatusOr<ShardViewRef> view = PullView(*shard, 0, 2);
  ASSERT_THAT(view, IsOk());
  EXPECT_TRUE((*view)->scalar_sums.empty());
}

TEST(PsShardControlTest, Async_Scalars_NoSums) {
  std::shared_ptr<PsShard> shard = MakeShard(
      ShardConfig(2, 0, 4, UpdateMode::kAsync), std::vector<float>(4));
  ASSERT_NE(shard, nullptr);
  ASSERT_THAT(PushWith(*shard, 0, 0, std::vector<float>(4), Control({1, 2})),
              IsOk());
  ASSERT_THAT(PushWith(*shard, 1, 0, std::vector<float>(4), Control({1})),
              IsOk());
  absl::StatusOr<ShardViewRef> view = PullView(*shard, 0, 1);
  ASSERT_THAT(view, IsOk());
  EXPECT_TRUE((*view)->scalar_sums.empty());
}

TEST(PsShardControlTest, Sync_ScalarCountMismatch_InvalidArgumentUnchanged) {
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(3, 0, 4), std::vector<float>(4, 1.0f));
  ASSERT_NE(shard, nullptr);
  const std::vector<float> grads(4, 1.0f);
  ASSERT_THAT(PushWith(*shard, 0, 0, grads, Control({1, 2})), IsOk());
  // Mid-step (rank 0 pushed step 0): the state cannot be exported now, so
  // the counters say whether the refused push changed anything; the
  // parameters are checked after the step below.
  const auto before = StatsSnapshot(*shard);
  // Checked when the push begins...
  EXPECT_THAT(PushWith(*shard, 1, 0, grads, Control({1, 2, 3})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("rank 1 sent 3 step scalars"),
                             HasSubstr("rank 0 sent 2"), HasSubstr("step 0"))));
  EXPECT_TRUE(StatsSnapshot(*shard) == before);
  ASSERT_THAT(PushWith(*shard, 1, 0, grads, Control({3, 4})), IsOk());
  ASSERT_THAT(PushWith(*shard, 2, 0, grads, Control({5, 6})), IsOk());
  {
    absl::StatusOr<ShardViewRef> view = PullView(*shard, 2, 1);
    ASSERT_THAT(view, IsOk());
    EXPECT_THAT((*view)->scalar_sums, ElementsAre(9.0, 12.0));
    EXPECT_THAT((*view)->params, ElementsAre(0, 0, 0, 0));
  }
  // ... and when it commits: both pushes of step 1 began before either
  // committed.
  absl::StatusOr<PsShard::Push> one =
      shard->BeginPush(0, 1, Soon(), Control({5, 6}));
  absl::StatusOr<PsShard::Push> two =
      shard->BeginPush(1, 1, Soon(), Control({7}));
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(two, IsOk());
  ASSERT_THAT(one->Append(AsBytes(grads)), IsOk());
  ASSERT_THAT(two->Append(AsBytes(grads)), IsOk());
  ASSERT_THAT(shard->Commit(std::move(*one), Soon()), IsOk());
  const auto middle = StatsSnapshot(*shard);  // mid-step, as above
  EXPECT_THAT(shard->Commit(std::move(*two), Soon()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("rank 1 sent 1 step scalars for step 1")));
  EXPECT_TRUE(StatsSnapshot(*shard) == middle);
  // The rank may push the step again, right this time.
  ASSERT_THAT(PushWith(*shard, 1, 1, grads, Control({7, 8})), IsOk());
  ASSERT_THAT(PushWith(*shard, 2, 1, grads, Control({0, 0})), IsOk());
  absl::StatusOr<ShardViewRef> view = PullView(*shard, 1, 2);
  ASSERT_THAT(view, IsOk());
  EXPECT_THAT((*view)->scalar_sums, ElementsAre(12.0, 14.0));
  EXPECT_THAT((*view)->params, ElementsAre(-1, -1, -1, -1));
}

TEST(PsShardControlTest, Sync_Decision_LargestEpochForNextStepKeptUntilNewer) {
  constexpr int kWorkers = 3;
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(kWorkers, 0, 2), std::vector<float>(2));
  ASSERT_NE(shard, nullptr);
  // Per step: each rank's epoch, and the decision every reply must carry.
  const std::vector<std::vector<int64_t>> epochs = {
      {0, 0, 0}, {0, 2, 1}, {2, 2, 2}, {1, 3, 0}, {2, 1, 3}, {4, 4, 4}};
  const std::vector<SwitchDecision> expected = {{0, 0}, {2, 2}, {2, 2},
                                                {3, 4}, {3, 4}, {4, 6}};
  for (int64_t t = 0; t < static_cast<int64_t>(epochs.size()); ++t) {
    for (int r = kWorkers - 1; r >= 0; --r) {
      ASSERT_THAT(PushWith(*shard, r, t, std::vector<float>(2),
                           Control({}, epochs[t][r])),
                  IsOk());
    }
    for (int r = 0; r < kWorkers; ++r) {
      absl::StatusOr<ShardViewRef> view = PullView(*shard, r, t + 1);
      ASSERT_THAT(view, IsOk());
      EXPECT_EQ((*view)->decision, expected[t])
          << "step " << t << " rank " << r;
    }
  }
  EXPECT_EQ(shard->decision(), (SwitchDecision{4, 6}));
}

TEST(PsShardControlTest, Async_Decision_LargestPushedPlusTwoPendingUntilAll) {
  std::shared_ptr<PsShard> shard = MakeShard(
      ShardConfig(2, 0, 2, UpdateMode::kAsync), std::vector<float>(2));
  ASSERT_NE(shard, nullptr);
  const std::vector<float> g(2);
  auto decision_of = [&](int rank) {
    absl::StatusOr<ShardViewRef> view = PullView(*shard, rank, 0);
    return view.ok() ? (*view)->decision : SwitchDecision{-1, -1};
  };
  for (int64_t t = 0; t < 3; ++t) {
    ASSERT_THAT(PushWith(*shard, 0, t, g, Control({}, 0)), IsOk());
  }
  EXPECT_EQ(decision_of(0), (SwitchDecision{0, 0}));
  // Rank 1 reports epoch 5 with its step 0: the largest step pushed is 2.
  ASSERT_THAT(PushWith(*shard, 1, 0, g, Control({}, 5)), IsOk());
  EXPECT_EQ(decision_of(1), (SwitchDecision{5, 4}));
  // Rank 0's reply to step 2 predates it; its next reply carries it.
  ASSERT_THAT(PushWith(*shard, 0, 3, g, Control({}, 5)), IsOk());
  EXPECT_EQ(decision_of(0), (SwitchDecision{5, 4}));
  // Pending until both ranks pushed step 3: epoch 7 waits.
  ASSERT_THAT(PushWith(*shard, 1, 1, g, Control({}, 7)), IsOk());
  EXPECT_EQ(decision_of(1), (SwitchDecision{5, 4}));
  ASSERT_THAT(PushWith(*shard, 1, 2, g, Control({}, 7)), IsOk());
  EXPECT_EQ(decision_of(1), (SwitchDecision{5, 4}));
  // Rank 1's step 3 ends the pending decision; its reply still carries
  // (5, 4), and epoch 7 is decided with the largest step pushed then (3).
  ASSERT_THAT(PushWith(*shard, 1, 3, g, Control({}, 7)), IsOk());
  EXPECT_EQ(decision_of(1), (SwitchDecision{5, 4}));
  EXPECT_EQ(shard->decision(), (SwitchDecision{7, 5}));
  ASSERT_THAT(PushWith(*shard, 0, 4, g, Control({}, 0)), IsOk());
  EXPECT_EQ(decision_of(0), (SwitchDecision{7, 5}));
}

// Runs `kWorkers` ranks as threads for `kSteps` steps; each rank hears of
// new switch epochs at random times (a "coordinator" raises them) and
// reports the newest it heard. Checks that every decision (E, S) with S
// <= kSteps reached every rank in a reply to a step <= S - 1, that all
// ranks saw the same decisions, and that they only grow.
void RunDecisionProperty(UpdateMode mode, int staleness, uint32_t seed) {
  constexpr int kWorkers = 4;
  constexpr int64_t kSteps = 100;
  PsShardConfig config = ShardConfig(kWorkers, 0, 8, mode);
  config.staleness = staleness;
  std::shared_ptr<PsShard> shard = MakeShard(config, std::vector<float>(8));
  ASSERT_NE(shard, nullptr);
  std::atomic<int64_t> newest{0};
  std::atomic<bool> done{false};
  std::thread coordinator([&]() {
    std::mt19937 rng(seed);
    while (!done.load()) {
      newest.fetch_add(1 + static_cast<int64_t>(rng() % 2));
      absl::SleepFor(absl::Microseconds(200 + rng() % 800));
    }
  });
  // seen[r][t]: the decision in rank r's reply to step t.
  std::vector<std::vector<SwitchDecision>> seen(kWorkers);
  std::vector<absl::Status> statuses(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r]() {
      std::mt19937 rng(seed * 31 + static_cast<uint32_t>(r));
      int64_t heard = 0;
      for (int64_t t = 0; t < kSteps; ++t) {
        if (rng() % 3 == 0) heard = newest.load();  // news arrives late
        absl::SleepFor(absl::Microseconds(rng() % 500));
        absl::Status s =
            PushWith(*shard, r, t, std::vector<float>(8), Control({}, heard));
        if (s.ok()) {
          absl::StatusOr<ShardViewRef> view = shard->Pull(r, t + 1, Soon());
          s = view.status();
          if (s.ok()) seen[r].push_back((*view)->decision);
        }
        if (!s.ok()) {
          statuses[r] = s;
          return;
        }
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  done.store(true);
  coordinator.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    ASSERT_EQ(seen[r].size(), static_cast<size_t>(kSteps));
  }
  std::map<int64_t, int64_t> decisions;  // epoch -> step, over all ranks
  for (int r = 0; r < kWorkers; ++r) {
    SwitchDecision last;
    for (int64_t t = 0; t < kSteps; ++t) {
      const SwitchDecision d = seen[r][t];
      ASSERT_GE(d.epoch, last.epoch) << "rank " << r << " step " << t;
      ASSERT_GE(d.step, last.step) << "rank " << r << " step " << t;
      const bool first_sighting = d != last;
      last = d;
      if (d.epoch == 0) continue;
      auto [it, inserted] = decisions.emplace(d.epoch, d.step);
      ASSERT_EQ(it->second, d.step)
          << "epoch " << d.epoch << " was decided for two steps";
      // First heard before the rank may have passed it (replies keep the
      // decision afterwards until a newer one).
      if (first_sighting) {
        ASSERT_GT(d.step, t)
            << "rank " << r << " first learned (" << d.epoch << ", " << d.step
            << ") in its reply to step " << t;
      }
    }
  }
  ASSERT_GE(decisions.size(), 2u) << "the test made too few decisions";
  for (const auto& [epoch, step] : decisions) {
    if (step > kSteps) continue;  // would be seen after the run
    for (int r = 0; r < kWorkers; ++r) {
      bool learned = false;
      for (int64_t t = 0; t <= step - 1; ++t) {
        learned |= seen[r][t] == SwitchDecision{epoch, step};
      }
      EXPECT_TRUE(learned) << "rank " << r << " never learned (" << epoch
                           << ", " << step << ") before step " << step;
    }
  }
}

TEST(PsShardControlTest, Sync_ConcurrentEpochs_EveryRankLearnsEachDecision) {
  RunDecisionProperty(UpdateMode::kSync, 0, 1);
}

TEST(PsShardControlTest, Async_ConcurrentEpochs_EveryRankLearnsEachDecision) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    RunDecisionProperty(UpdateMode::kAsync, 0, seed);
  }
}

TEST(PsShardControlTest, Ssp_ConcurrentEpochs_EveryRankLearnsEachDecision) {
  for (uint32_t seed : {4u, 5u}) {
    RunDecisionProperty(UpdateMode::kStaleSync, 2, seed);
  }
}

TEST(PsShardControlTest, SumGradients_Sync_AppliesPlainSum) {
  PsShardConfig config = ShardConfig(3, 0, 5);
  config.sum_gradients = true;
  std::shared_ptr<PsShard> shard = MakeShard(config, std::vector<float>(5));
  ASSERT_NE(shard, nullptr);
  for (int r = 0; r < 3; ++r) {
    std::vector<float> g(5);
    for (size_t i = 0; i < 5; ++i) g[i] = static_cast<float>(i + 10 * r);
    ASSERT_THAT(PushGradient(*shard, r, 0, g), IsOk());
  }
  absl::StatusOr<std::vector<float>> params = PullParams(*shard, 0, 1);
  ASSERT_THAT(params, IsOk());
  // lr 1: params = -(sum over ranks of i + 10 r) = -(3 i + 30).
  EXPECT_THAT(*params, ElementsAre(-30, -33, -36, -39, -42));
}

// Rank r's gradient: non-integer values, so that any other summation
// order or a misplaced chunk would show.
std::vector<float> OddGradient(size_t n, int rank) {
  std::mt19937 rng(static_cast<uint32_t>(rank + 7));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(n);
  for (float& v : g) v = dist(rng) * 1e-3f + static_cast<float>(rank);
  return g;
}

// Pushes `grads` descending in chunks of the given sizes (floats, from the
// end), through Append, AppendExternal in two pieces (last piece first),
// or a receive into unfilled() + MarkFilled, by `how`.
[[nodiscard]] absl::Status PushDescending(PsShard& shard, int rank,
                                          int64_t step,
                                          const std::vector<float>& grads,
                                          const std::vector<size_t>& chunks,
                                          int how) {
  PushOptions options;
  options.descending = true;
  absl::StatusOr<PsShard::Push> push =
      shard.BeginPush(rank, step, Soon(), options);
  if (!push.ok()) return push.status();
  // External pieces live in their own buffer, as gRPC's would.
  auto external = std::make_shared<std::vector<float>>(grads);
  size_t end = grads.size();
  size_t c = 0;
  while (end > 0) {
    const size_t n = std::min(chunks[c++ % chunks.size()], end);
    const size_t begin = end - n;
    absl::Status s;
    if (how == 0) {
      s = push->Append(AsBytes(absl::MakeConstSpan(grads).subspan(begin, n)));
    } else if (how == 1) {
      // Split inside a float, to exercise floats across pieces.
      const char* bytes = reinterpret_cast<const char*>(external->data());
      const size_t lo = begin * sizeof(float);
      const size_t mid = lo + (n * sizeof(float)) / 2 + 1;
      const size_t hi = end * sizeof(float);
      if (n == 1) {
        s = push->AppendExternal({bytes + lo, hi - lo}, external);
      } else {
        s = push->AppendExternal({bytes + mid, hi - mid}, external);
        if (s.ok()) s = push->AppendExternal({bytes + lo, mid - lo}, nullptr);
      }
    } else {
      absl::Span<char> room = push->unfilled();
      std::memcpy(room.data() + room.size() - n * sizeof(float),
                  grads.data() + begin, n * sizeof(float));
      s = push->MarkFilled(n * sizeof(float));
    }
    if (!s.ok()) return s;
    end = begin;
  }
  return shard.Commit(std::move(*push), Soon());
}

TEST(PsShardControlTest, Descending_AnyChunking_BitwiseSameAsAscending) {
  constexpr int kWorkers = 3;
  constexpr size_t kSize = 4099;
  for (UpdateMode mode : {UpdateMode::kSync, UpdateMode::kAsync}) {
    std::vector<float> init(kSize);
    for (size_t i = 0; i < kSize; ++i) init[i] = 0.001f * i;
    std::shared_ptr<PsShard> up =
        MakeShard(ShardConfig(kWorkers, 0, kSize, mode, 0.37), init);
    std::shared_ptr<PsShard> down =
        MakeShard(ShardConfig(kWorkers, 0, kSize, mode, 0.37), init);
    ASSERT_NE(up, nullptr);
    ASSERT_NE(down, nullptr);
    for (int64_t t = 0; t < 2; ++t) {
      for (int r = 0; r < kWorkers; ++r) {
        const std::vector<float> g = OddGradient(kSize, r + 3 * t);
        ASSERT_THAT(PushGradient(*up, r, t, g, 1000), IsOk());
        ASSERT_THAT(PushDescending(*down, r, t, g, {1, 333, 1024, 7}, r),
                    IsOk())
            << "rank " << r << " way " << r;
      }
    }
    absl::StatusOr<std::vector<float>> a = PullParams(*up, 0, 2);
    absl::StatusOr<std::vector<float>> b = PullParams(*down, 0, 2);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    for (size_t i = 0; i < kSize; ++i) {
      ASSERT_EQ(std::memcmp(&(*a)[i], &(*b)[i], sizeof(float)), 0)
          << "mode " << UpdateModeName(mode) << " at index " << i << ": "
          << (*a)[i] << " vs " << (*b)[i];
    }
  }
}

TEST(PsShardControlTest, Descending_Overrun_InvalidArgumentUnchanged) {
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(1, 0, 4), std::vector<float>(4, 1.0f));
  ASSERT_NE(shard, nullptr);
  const auto before = Snapshot(*shard);
  PushOptions options;
  options.descending = true;
  absl::StatusOr<PsShard::Push> push = shard->BeginPush(0, 0, Soon(), options);
  ASSERT_THAT(push, IsOk());
  const std::vector<float> five(5, 1.0f);
  EXPECT_THAT(push->Append(AsBytes(five)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("more than its gradient")));
  EXPECT_THAT(
      shard->Commit(std::move(*push), Soon()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("incomplete")));
  EXPECT_TRUE(Snapshot(*shard) == before);
}

TEST(PsShardControlTest, Async_AcquireStateAtStep_WaitsForEveryRank) {
  std::shared_ptr<PsShard> shard = MakeShard(
      ShardConfig(2, 0, 3, UpdateMode::kAsync), std::vector<float>(3));
  ASSERT_NE(shard, nullptr);
  const std::vector<float> one(3, 1.0f);
  for (int64_t t = 0; t < 3; ++t) {
    ASSERT_THAT(PushGradient(*shard, 0, t, one), IsOk());
  }
  ASSERT_THAT(PushGradient(*shard, 1, 0, one), IsOk());
  // Rank 1 is behind: the drain times out naming it.
  EXPECT_THAT(shard->AcquireState(absl::Now() + absl::Milliseconds(50), 3),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("rank 1 has pushed up to step 0"),
                             HasSubstr("step 3"))));
  absl::StatusOr<ParameterState> state;
  std::thread fetcher([&]() { state = shard->ExportState(Soon(), 3); });
  absl::SleepFor(absl::Milliseconds(50));
  ASSERT_THAT(PushGradient(*shard, 1, 1, one), IsOk());
  ASSERT_THAT(PushGradient(*shard, 1, 2, one), IsOk());
  fetcher.join();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->step, 3);
  EXPECT_THAT(state->params, ElementsAre(-6, -6, -6));
  // A rank past the step: the state is no longer the step's.
  ASSERT_THAT(PushGradient(*shard, 0, 3, one), IsOk());
  EXPECT_THAT(shard->AcquireState(Soon(), 3),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("ranks 0 already pushed")));
  EXPECT_THAT(shard->AcquireState(Soon(), -1),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(PsShardControlTest, Sync_AcquireStateAtStep_OnlyAtThatStep) {
  std::shared_ptr<PsShard> shard =
      MakeShard(ShardConfig(1, 0, 2), std::vector<float>(2));
  ASSERT_NE(shard, nullptr);
  ASSERT_THAT(PushGradient(*shard, 0, 0, std::vector<float>(2, 1.0f)), IsOk());
  EXPECT_THAT(shard->AcquireState(Soon(), 2),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the shard is at step 1")));
  absl::StatusOr<ParameterState> state = shard->ExportState(Soon(), 1);
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->step, 1);
  EXPECT_THAT(state->params, ElementsAre(-1, -1));
}

}  // namespace
}  // namespace gradsync
