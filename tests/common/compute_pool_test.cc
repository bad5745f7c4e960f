#include "common/compute_pool.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

// Every item is visited exactly once, by ranges that tile [0, n).
void ExpectCoversOnce(ComputePool& pool, size_t n, size_t grain) {
  std::vector<std::atomic<int>> visits(n);
  std::atomic<int> ranges{0};
  pool.For(n, grain, [&](size_t begin, size_t end) {
    ASSERT_LT(begin, end);
    ASSERT_LE(end, n);
    ++ranges;
    for (size_t i = begin; i < end; ++i) ++visits[i];
  });
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(visits[i].load(), 1) << "item " << i << " of " << n;
  }
  EXPECT_LE(ranges.load(), pool.helpers() + 1);
  if (n > 0) {
    EXPECT_GE(ranges.load(), 1);
  }
}

TEST(ComputePoolTest, CoversEveryItemOnce) {
  for (int helpers : {0, 1, 3}) {
    ComputePool pool(helpers);
    EXPECT_EQ(pool.helpers(), helpers);
    for (size_t n : {0, 1, 2, 3, 4, 5, 7, 100, 1001}) {
      for (size_t grain : {0, 1, 3, 64}) {
        SCOPED_TRACE(testing::Message() << "helpers " << helpers << " n " << n
                                        << " grain " << grain);
        ExpectCoversOnce(pool, n, grain);
      }
    }
  }
}

TEST(ComputePoolTest, GrainLimitsTheParts) {
  ComputePool pool(3);
  std::atomic<int> ranges{0};
  pool.For(100, 60, [&](size_t, size_t) { ++ranges; });
  EXPECT_EQ(ranges.load(), 1);  // 100 items make one part of >= 60
  ranges = 0;
  pool.For(100, 30, [&](size_t, size_t) { ++ranges; });
  EXPECT_EQ(ranges.load(), 3);
}

// The parts really run at once: with two helpers, three parts that each
// wait until all three started finish (a pool that ran them one after
// another would wait forever; the wait is bounded so the test fails).
TEST(ComputePoolTest, PartsRunConcurrently) {
  ComputePool pool(2);
  absl::Mutex mu;
  int started = 0;
  bool all = true;
  pool.For(3, 1, [&](size_t, size_t) {
    absl::MutexLock lock(&mu);
    ++started;
    auto three = [&started]() { return started == 3; };
    if (!mu.AwaitWithTimeout(absl::Condition(&three), absl::Seconds(30))) {
      all = false;
    }
  });
  EXPECT_TRUE(all);
}

// Several callers share the helpers; each gets exactly its own results.
TEST(ComputePoolTest, ConcurrentCallersShareThePool) {
  ComputePool pool(2);
  constexpr int kCallers = 4;
  constexpr size_t kItems = 10000;
  std::vector<std::vector<int>> out(kCallers, std::vector<int>(kItems));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        pool.For(kItems, 16, [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) out[c][i] += c + 1;
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    for (size_t i = 0; i < kItems; ++i) {
      ASSERT_EQ(out[c][i], 50 * (c + 1)) << "caller " << c << " item " << i;
    }
  }
}

// The default pool works in parallel where the machine allows, and its
// helpers and the caller, which always runs a part itself, fit the
// machine's cores together.
TEST(ComputePoolTest, DefaultPool_CallerRunsAPart_ThreadsFitTheCores) {
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ComputePool pool(ComputePool::DefaultHelpers());
  EXPECT_LE(pool.helpers() + 1, cores);
  if (cores > 1) {
    EXPECT_GE(pool.helpers(), 1);
  }

  constexpr size_t kItems = 4096;
  absl::Mutex mu;
  std::set<std::thread::id> threads;
  size_t items = 0;
  pool.For(kItems, /*grain=*/1, [&](size_t begin, size_t end) {
    absl::MutexLock lock(&mu);
    threads.insert(std::this_thread::get_id());
    items += end - begin;
  });
  EXPECT_EQ(items, kItems);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 1u)
      << "the caller ran no part";
  EXPECT_LE(static_cast<int>(threads.size()), cores);
}

}  // namespace
}  // namespace gradsync
