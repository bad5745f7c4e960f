#include "common/blocking_executor.h"

#include <atomic>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

constexpr absl::Duration kWait = absl::Seconds(30);

TEST(BlockingExecutorTest, RunsEveryClosure) {
  std::atomic<int> sum{0};
  {
    BlockingExecutor executor;
    for (int i = 1; i <= 100; ++i) {
      executor.Schedule([&sum, i] { sum += i; });
    }
  }  // the destructor runs what is queued and waits
  EXPECT_EQ(sum.load(), 5050);
}

// The reason it exists: closures that wait for each other must not wait
// for a free thread. Here 16 closures each wait until all 16 run at once;
// a fixed pool smaller than 16 would deadlock.
TEST(BlockingExecutorTest, BlockedClosuresNeverStarveLaterOnes) {
  constexpr int kClosures = 16;
  absl::BlockingCounter started(kClosures);
  absl::Notification all_started;
  std::atomic<int> finished{0};
  BlockingExecutor executor;  // destroyed first: it waits for the closures
  for (int i = 0; i < kClosures; ++i) {
    executor.Schedule([&] {
      started.DecrementCount();
      if (all_started.WaitForNotificationWithTimeout(kWait)) ++finished;
    });
  }
  started.Wait();
  all_started.Notify();
  EXPECT_GE(executor.threads(), kClosures);
  absl::Time deadline = absl::Now() + kWait;
  while (finished.load() < kClosures && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(finished.load(), kClosures);
}

TEST(BlockingExecutorTest, IdleThreadsAreReusedThenExit) {
  BlockingExecutor executor(/*idle_timeout=*/absl::Milliseconds(50));
  for (int i = 0; i < 20; ++i) {
    absl::Notification done;
    executor.Schedule([&done] { done.Notify(); });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(kWait));
    absl::SleepFor(absl::Milliseconds(5));  // let its thread go idle
  }
  // One closure at a time: idle threads took the later ones (a thread
  // still finishing its closure may have made Schedule start another).
  EXPECT_LT(executor.threads(), 20);
  const absl::Time deadline = absl::Now() + kWait;
  while (executor.threads() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(executor.threads(), 0);
  // And a new one starts when work comes again.
  absl::Notification done;
  executor.Schedule([&done] { done.Notify(); });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
}

TEST(BlockingExecutorTest, ClosuresMayScheduleMore) {
  std::atomic<int> ran{0};
  absl::Notification last;
  BlockingExecutor executor;
  executor.Schedule([&] {
    ++ran;
    executor.Schedule([&] {
      ++ran;
      last.Notify();
    });
  });
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(kWait));
  EXPECT_EQ(ran.load(), 2);
}

}  // namespace
}  // namespace gradsync
