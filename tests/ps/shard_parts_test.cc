// The parts of a PsShard on their own: the switch decider's step control
// (which epoch is decided for which step, what a pull carries) and the view
// guard's readers/writer protocol.
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/shard/switch_decider.h"
#include "server/ps/shard/view_guard.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SwitchDeciderTest, Sync_ScalarsSumInRankOrderAndTheNewestEpochWins) {
  SwitchDecider decider(/*sync=*/true, /*num_workers=*/3);
  decider.NoteSyncCommit(2, /*first=*/true, {1.5, 10}, /*epoch=*/0);
  EXPECT_THAT(decider.CheckScalars("shard", 1, 0, 7, 2), IsOk());
  EXPECT_THAT(decider.CheckScalars("shard", 1, 0, 7, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("rank 0 sent 1 step scalars for step 7, but "
                                 "rank 2 sent 2")));
  decider.NoteSyncCommit(0, false, {0.25, 1}, /*epoch=*/3);
  decider.NoteSyncCommit(1, false, {0.25, 2}, /*epoch=*/2);
  EXPECT_THAT(decider.SumScalars(), ElementsAre(2.0, 13.0));
  decider.FinishSyncStep(decider.SumScalars(), /*next_step=*/8);
  EXPECT_EQ(decider.decision(), (SwitchDecision{3, 8}));
  const StepControl control = decider.ForPull(1);
  EXPECT_THAT(control.scalar_sums, ElementsAre(2.0, 13.0));
  EXPECT_EQ(control.decision, (SwitchDecision{3, 8}));
  // An older epoch decides nothing new.
  decider.FinishSyncStep({}, 9);
  EXPECT_EQ(decider.decision(), (SwitchDecision{3, 8}));
}

TEST(SwitchDeciderTest, Async_DecidesTwoStepsPastTheLargestPushed) {
  SwitchDecider decider(/*sync=*/false, /*num_workers=*/2);
  decider.NoteEpoch(1);
  decider.MaybeDecide(/*slowest_step=*/4, /*largest_pushed_step=*/6);
  EXPECT_EQ(decider.decision(), (SwitchDecision{1, 8}));
  decider.SetReply(0);
  // A newer epoch waits while the decision is pending (slowest < 8)...
  decider.NoteEpoch(2);
  decider.MaybeDecide(7, 9);
  EXPECT_EQ(decider.decision(), (SwitchDecision{1, 8}));
  // ...and is decided once every rank reached step 8.
  decider.MaybeDecide(8, 9);
  EXPECT_EQ(decider.decision(), (SwitchDecision{2, 11}));
  // Rank 0's pull carries the decision as of its commit; rank 1 the latest.
  EXPECT_EQ(decider.ForPull(0).decision, (SwitchDecision{1, 8}));
  EXPECT_EQ(decider.ForPull(1).decision, (SwitchDecision{2, 11}));
  EXPECT_TRUE(decider.ForPull(1).scalar_sums.empty());
  decider.ResetForSeed();
  EXPECT_EQ(decider.ForPull(0).decision, (SwitchDecision{2, 11}));
}

TEST(ViewGuardTest, WriterWaitsForReadersAndKeepsNewOnesOut) {
  absl::Mutex mu;
  ViewGuard guard(&mu);
  auto owner = std::make_shared<int>(0);
  std::shared_ptr<const int> view;
  {
    absl::MutexLock lock(&mu);
    view = guard.ShareLocked(new int(42), owner);
  }
  absl::Notification began;
  std::thread writer([&] {
    absl::MutexLock lock(&mu);
    ASSERT_THAT(guard.BeginWriteLocked(
                    absl::Now() + absl::Seconds(30),
                    [] { return absl::OkStatus(); }, "test write"),
                IsOk());
    began.Notify();
  });
  // The reader is alive: the writer must still wait.
  EXPECT_FALSE(began.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  view.reset();
  writer.join();
  EXPECT_TRUE(began.HasBeenNotified());
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(guard.writing());
  // A second writer times out behind the first, naming itself.
  EXPECT_THAT(guard.BeginWriteLocked(
                  absl::Now() + absl::Milliseconds(20),
                  [] { return absl::OkStatus(); }, "second write"),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("second write timed out waiting for 0 "
                                 "parameter readers")));
  guard.EndWriteLocked();
  EXPECT_FALSE(guard.writing());
}

TEST(ViewGuardTest, EndedShard_StopsTheWaitWithItsError) {
  absl::Mutex mu;
  ViewGuard guard(&mu);
  std::shared_ptr<const int> view;
  {
    absl::MutexLock lock(&mu);
    view = guard.ShareLocked(new int(1), nullptr);
    EXPECT_THAT(guard.BeginWriteLocked(
                    absl::Now() + absl::Seconds(30),
                    [] { return absl::AbortedError("released"); }, "write"),
                StatusIs(absl::StatusCode::kAborted));
    EXPECT_FALSE(guard.writing());
  }
  view.reset();  // the release takes the mutex
}

}  // namespace
}  // namespace gradsync
