// Integration test of a worker daemon dying mid-job (SIGKILL, as a crash
// or an OOM kill would): the job fails within the coordinator's lease with
// a message naming a rank, the surviving worker is freed and runs the next
// job, and the dead one is declared lost.
#include <signal.h>

#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::ContainsRegex;

constexpr int64_t kLeaseMs = 4000;
// Room for the lease checker's period and a busy machine.
constexpr absl::Duration kSlack = absl::Seconds(3);
constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kJobTimeout = absl::Seconds(60);

// On the ring and on the parameter server (where the survivors wait in the
// shards for the dead ranks' pushes, not in a collective).
class WorkerFailureTest : public ClusterTest,
                          public ::testing::WithParamInterface<SyncMode> {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.lease_ms = kLeaseMs;
    options.heartbeat_ms = 250;
    options.parameter_servers = 1;
    return options;
  }
};

TEST_P(WorkerFailureTest, WorkerKilledMidJob_JobFailsWithinLease_OthersFreed) {
  JobSpec spec = LongSyntheticSpec(4);
  spec.set_mode(GetParam());
  absl::StatusOr<std::string> job = cluster().Submit(spec);
  ASSERT_THAT(job, IsOk());
  absl::StatusOr<JobStatus> running = cluster().WaitForJob(
      *job,
      [](const JobStatus& s) {
        return s.state() == JOB_STATE_RUNNING && s.step() >= 3;
      },
      kStartTimeout, "RUNNING at step 3");
  ASSERT_THAT(running, IsOk());
  // Ranks 2 and 3 are on node-b (worker 1).
  for (const RankPlacement& p : running->ranks()) {
    EXPECT_EQ(p.host(), TestCluster::WorkerHost(p.rank() < 2 ? 0 : 1))
        << "rank " << p.rank();
  }

  const absl::Time killed = absl::Now();
  cluster().worker(1).Signal(SIGKILL);
  const absl::Duration lease = absl::Milliseconds(kLeaseMs);
  absl::StatusOr<JobStatus> end =
      cluster().WaitForJobEnd(*job, lease + kSlack + kJobTimeout);
  const absl::Duration took = absl::Now() - killed;
  ASSERT_THAT(end, IsOk());
  std::cout << "job " << *job << " " << ShortStateName(end->state()) << " "
            << absl::FormatDuration(took)
            << " after the worker was killed: " << end->message() << "\n";
  EXPECT_EQ(end->state(), JOB_STATE_FAILED);
  EXPECT_THAT(end->message(), ContainsRegex("ranks? [0-9]")) << end->message();
  EXPECT_LE(took, lease + kSlack)
      << "the job failed " << absl::FormatDuration(took)
      << " after the worker died: " << end->message();

  // node-a is free again; node-b is lost once its lease has run out.
  const std::string survivor = cluster().worker_id(0);
  const std::string dead = cluster().worker_id(1);
  EXPECT_THAT(cluster().WaitForWorkers(
                  [&](const ListWorkersResponse& workers) {
                    bool free = false, lost = false;
                    for (const WorkerInfo& w : workers.workers()) {
                      if (w.worker_id() == survivor) {
                        free = w.state() == WORKER_STATE_IDLE &&
                               w.free_devices() == 2 && w.job_ids().empty();
                      }
                      if (w.worker_id() == dead)
                        lost = w.state() == WORKER_STATE_LOST;
                    }
                    return free && lost;
                  },
                  lease + kSlack, "node-a idle and node-b lost"),
              IsOk());

  // The survivor takes the next job and finishes it.
  JobSpec next = LongSyntheticSpec(2, /*floats=*/1024, /*compute_ms=*/1);
  next.set_steps(20);
  next.set_mode(GetParam());
  absl::StatusOr<std::string> second = cluster().Submit(next);
  ASSERT_THAT(second, IsOk());
  absl::StatusOr<JobStatus> second_end =
      cluster().WaitForJobEnd(*second, kJobTimeout);
  ASSERT_THAT(second_end, IsOk());
  EXPECT_EQ(second_end->state(), JOB_STATE_SUCCEEDED) << second_end->message();
  for (const RankPlacement& p : second_end->ranks()) {
    EXPECT_EQ(p.worker_id(), survivor) << "rank " << p.rank();
  }
  // And a job larger than what is left is refused, not queued forever.
  EXPECT_THAT(cluster().Submit(LongSyntheticSpec(4)),
              StatusIs(absl::StatusCode::kResourceExhausted));
}

INSTANTIATE_TEST_SUITE_P(Modes, WorkerFailureTest,
                         ::testing::Values(SYNC_MODE_RING, SYNC_MODE_PS),
                         [](const ::testing::TestParamInfo<SyncMode>& info) {
                           return info.param == SYNC_MODE_PS
                                      ? std::string("Ps")
                                      : std::string("Ring");
                         });

}  // namespace
}  // namespace testing
}  // namespace gradsync
