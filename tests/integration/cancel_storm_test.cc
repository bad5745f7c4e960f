// A submit/cancel storm against a real 3-device worker daemon (issue 43,
// finding 2): a token holder once got a worker killed for lack of memory
// this way, because the coordinator gave a cancelled job's devices to the
// next job while the worker was still starting the cancelled ranks. Now a
// device is free only when the worker's heartbeat says its ranks are gone,
// so the worker never holds more jobs than devices, its memory and threads
// stay bounded, and it never has to refuse a start.
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A field of /proc/PID/status ("VmRSS" in kB, "Threads"); -1 if absent.
int64_t ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, field + ":")) continue;
    std::string value = line.substr(field.size() + 1);
    const size_t end = value.find_first_not_of(" \t0123456789", 0);
    int64_t n = -1;
    if (absl::SimpleAtoi(value.substr(0, end), &n)) return n;
  }
  return -1;
}

class CancelStormTest : public ClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.workers = 1;
    options.devices_per_worker = 3;
    return options;
  }
};

TEST_F(CancelStormTest, ThousandSubmitCancelPairs_WorkerBoundedEveryJobEnds) {
  const pid_t worker = cluster().worker(0).pid();
  const int64_t rss_before_kb = ProcStatus(worker, "VmRSS");
  const int64_t threads_before = ProcStatus(worker, "Threads");
  ASSERT_GT(rss_before_kb, 0);
  ASSERT_GT(threads_before, 0);
  int64_t rss_most_kb = rss_before_kb;
  int64_t threads_most = threads_before;

  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<std::string> job =
        cluster().Submit(LongSyntheticSpec(1 + i % 3, 1 << 16, 5));
    ASSERT_TRUE(job.ok()) << "pair " << i << ": " << job.status();
    absl::StatusOr<JobStatus> end = cluster().Cancel(*job);
    ASSERT_TRUE(end.ok()) << "pair " << i << ": " << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_CANCELLED) << "pair " << i;
    if (i % 20 == 0) {
      rss_most_kb = std::max(rss_most_kb, ProcStatus(worker, "VmRSS"));
      threads_most = std::max(threads_most, ProcStatus(worker, "Threads"));
    }
  }
  // Every cancelled rank stops and gives its devices back.
  ASSERT_TRUE(cluster().WaitForIdleWorkers(absl::Seconds(60)).ok());
  EXPECT_TRUE(cluster().worker(0).Running());

  // Three jobs at most (one per device), each of a 256 KiB model: far
  // below the gigabytes the unbounded storm reached.
  EXPECT_LT(rss_most_kb - rss_before_kb, 512 * 1024)
      << "worker RSS grew from " << rss_before_kb << " kB to " << rss_most_kb
      << " kB";
  EXPECT_LT(threads_most - threads_before, 100)
      << "worker threads grew from " << threads_before << " to "
      << threads_most;
  // The coordinator never gave the worker more jobs than it has devices,
  // so the worker never had to refuse one (Agent::Launch's limit); and the
  // storm did reach it (jobs were started and cancelled there).
  const std::string log = cluster().worker(0).ReadLog();
  EXPECT_THAT(log, Not(HasSubstr("could not start")));
  int assigned = 0;
  for (size_t at = log.find("assigned job "); at != std::string::npos;
       at = log.find("assigned job ", at + 1)) {
    ++assigned;
  }
  EXPECT_GE(assigned, 3) << log;

  // And it still trains.
  JobSpec spec = LongSyntheticSpec(3, 4096, 1);
  spec.set_steps(20);
  absl::StatusOr<std::string> job = cluster().Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<JobStatus> end =
      cluster().WaitForJobEnd(*job, absl::Seconds(60));
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
