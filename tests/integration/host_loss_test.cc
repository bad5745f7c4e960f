// Losing a host without shared storage: three workers, each in its own
// directory as if on its own disk, and a 4-rank ring job on node-a and
// node-b that writes its checkpoints to the relative directory "ckpt" on
// every host (checkpoint.onEveryHost) and may restart once. node-a (rank 0,
// whose files the coordinator names) is SIGKILLed and its directory
// removed. The restart is placed on node-b and node-c; node-c has no copy,
// node-b does, and the lowest rank that can read it broadcasts it: the
// restarted job ends with the parameter hash, loss and accuracy of a run
// nothing interrupted.
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"

namespace gradsync {
namespace testing {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kSteps = 1500;
constexpr absl::Duration kJobTimeout = absl::Seconds(180);
constexpr absl::Duration kIdleTimeout = absl::Seconds(30);

class HostLossTest : public ClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.workers = 3;
    options.devices_per_worker = 2;
    options.worker_dirs = true;
    // A short lease: the restart waits one out.
    options.lease_ms = 2500;
    return options;
  }

  bool HasCheckpoint(int worker, int64_t steps) {
    return std::filesystem::exists(absl::StrCat(cluster().WorkerDir(worker),
                                                "/ckpt/step-", steps, ".ckpt"));
  }
};

TEST_F(HostLossTest, RankZerosHostLost_RestartsFromACopyOnAnotherHost) {
  JobSpec spec = FashionMnistSpec(kRanks, {784, 64, 10}, /*batch_size=*/128,
                                  kSteps, /*learning_rate=*/1e-3, /*seed=*/9);
  if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_checkpoint()->set_every_steps(50);

  // The run nothing interrupts (on node-a and node-b).
  JobSpec reference = spec;
  reference.mutable_checkpoint()->set_directory("reference");
  absl::StatusOr<TestCluster::FinishedJob> full =
      cluster().RunToSuccess(reference, kJobTimeout);
  ASSERT_TRUE(full.ok()) << full.status();
  std::map<int, StepMetrics> last_of_full;
  for (const StepMetrics& m : full->metrics) {
    if (m.step() == kSteps - 1) last_of_full[m.rank()] = m;
  }
  ASSERT_EQ(last_of_full.size(), static_cast<size_t>(kRanks));
  ASSERT_TRUE(cluster().WaitForIdleWorkers(kIdleTimeout).ok());

  spec.mutable_checkpoint()->set_directory("ckpt");
  spec.mutable_checkpoint()->set_on_every_host(true);
  spec.set_max_restarts(1);
  absl::StatusOr<std::string> job = cluster().Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<JobStatus> stepping = cluster().WaitForJob(
      *job, [](const JobStatus& s) { return s.last_checkpoint_steps() >= 100; },
      kJobTimeout, "two checkpoints");
  ASSERT_TRUE(stepping.ok()) << stepping.status();
  ASSERT_EQ(stepping->ranks(0).host(), "node-a");
  ASSERT_EQ(stepping->ranks(2).host(), "node-b");
  cluster().worker(0).Signal(SIGKILL);
  std::filesystem::remove_all(cluster().WorkerDir(0));

  absl::StatusOr<JobStatus> failed = cluster().WaitForJobEnd(*job, kJobTimeout);
  ASSERT_TRUE(failed.ok()) << failed.status();
  ASSERT_EQ(failed->state(), JOB_STATE_FAILED);
  ASSERT_FALSE(failed->restarted_as().empty()) << failed->message();
  std::cout << failed->job_id() << ": " << failed->message() << "\n";
  const int64_t from = failed->last_checkpoint_steps();
  EXPECT_TRUE(HasCheckpoint(1, from)) << "node-b has no copy of step " << from;
  EXPECT_FALSE(HasCheckpoint(2, from)) << "node-c ran no rank of the job";

  absl::StatusOr<JobStatus> restarted =
      cluster().WaitForJobEnd(failed->restarted_as(), kJobTimeout);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_EQ(restarted->state(), JOB_STATE_SUCCEEDED) << restarted->message();
  for (const RankPlacement& rank : restarted->ranks()) {
    EXPECT_NE(rank.host(), "node-a") << "rank " << rank.rank();
  }
  EXPECT_EQ(restarted->first_step(), from);
  absl::StatusOr<std::vector<StepMetrics>> metrics =
      cluster().GetMetrics(restarted->job_id());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  int compared = 0;
  for (const StepMetrics& m : *metrics) {
    if (m.step() != kSteps - 1) continue;
    const StepMetrics& want = last_of_full.at(m.rank());
    EXPECT_EQ(m.param_hash(), want.param_hash()) << "rank " << m.rank();
    EXPECT_EQ(m.loss(), want.loss()) << "rank " << m.rank();
    ++compared;
  }
  EXPECT_EQ(compared, kRanks);
  EXPECT_EQ(restarted->test_accuracy(), full->status.test_accuracy());
  // Both hosts of the restart keep their own copies from then on.
  EXPECT_TRUE(HasCheckpoint(1, kSteps));
  EXPECT_TRUE(HasCheckpoint(2, kSteps));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
