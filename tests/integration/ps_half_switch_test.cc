// A 16-bit job (gradDtype bf16) switching between the ring and the
// parameter server on real daemons: a gradsync-coordinator, two
// gradsync-worker daemons (cpu:2 each: four ranks over two processes) and
// two gradsync-ps daemons on loopback, driven over gRPC as the CLI drives
// them.
//   - scripted ring -> PS (step 10) -> ring (step 20): every rank in every
//     step bitwise equal, each step on the path it should take, and the run
//     follows the unswitched bf16 ring run within 2% of the loss (the ring's
//     stated 16-bit tolerance, docs/collectives.md);
//   - `gradsync switch JOB ps` (SwitchJob) on a running bf16 job is
//     accepted and the job moves to PS and finishes in lockstep.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/integration/lockstep.h"

namespace gradsync {
namespace testing {
namespace {

constexpr int kRanks = 4;
constexpr absl::Duration kJobTimeout = absl::Seconds(240);
constexpr absl::Duration kIdleTimeout = absl::Seconds(30);
constexpr double kLossTolerance = 0.02;

JobSpec HalfSpec(int64_t steps) {
  JobSpec spec = FashionMnistSpec(kRanks, {784, 64, 10}, /*batch_size=*/128,
                                  steps, /*learning_rate=*/1e-3, /*seed=*/11);
  if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_optimizer()->set_name("adam");
  spec.mutable_ps()->set_shards(2);
  spec.set_grad_dtype("bf16");
  spec.set_mode(SYNC_MODE_RING);
  return spec;
}

double MaxRelativeDifference(const Trajectory& a, const Trajectory& b) {
  double worst = 0;
  for (size_t s = 0; s < a.loss.size() && s < b.loss.size(); ++s) {
    worst = std::max(worst, std::abs(a.loss[s] - b.loss[s]) /
                                std::max(std::abs(a.loss[s]), 1e-12));
  }
  return worst;
}

class PsHalfSwitchTest : public ClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.workers = 2;
    options.devices_per_worker = 2;
    options.parameter_servers = 2;
    return options;
  }

  void RunToSuccess(const JobSpec& spec, Trajectory* trajectory) {
    absl::StatusOr<TestCluster::FinishedJob> job =
        cluster().RunToSuccess(spec, kJobTimeout);
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_TRUE(
        InLockstep(job->metrics, spec.num_workers(), spec.steps(), trajectory));
    ASSERT_TRUE(cluster().WaitForIdleWorkers(kIdleTimeout).ok());
  }
};

TEST_F(PsHalfSwitchTest, Bf16RingPsRing_LockstepFollowsUnswitchedRun) {
  constexpr int64_t kSteps = 30;
  const JobSpec ring = HalfSpec(kSteps);
  JobSpec switched = ring;
  SwitchSpec* s = switched.add_switches();
  s->set_step(10);
  s->set_mode(SYNC_MODE_PS);
  s = switched.add_switches();
  s->set_step(20);
  s->set_mode(SYNC_MODE_RING);
  Trajectory reference, out;
  ASSERT_NO_FATAL_FAILURE(RunToSuccess(ring, &reference));
  ASSERT_NO_FATAL_FAILURE(RunToSuccess(switched, &out));
  for (int64_t step = 0; step < kSteps; ++step) {
    EXPECT_EQ(out.mode[step],
              step >= 10 && step < 20 ? SYNC_MODE_PS : SYNC_MODE_RING)
        << step;
  }
  for (int64_t step = 0; step < 10; ++step) {
    EXPECT_EQ(out.param_hash[step], reference.param_hash[step]) << step;
  }
  const double relative = MaxRelativeDifference(reference, out);
  std::cout << "bf16 ring -> PS -> ring: largest relative loss difference "
            << "to the unswitched bf16 ring run " << relative << "\n";
  EXPECT_LT(relative, kLossTolerance);
}

TEST_F(PsHalfSwitchTest, Bf16Job_RuntimeSwitchToPsAccepted) {
  constexpr int64_t kSteps = 400;
  const JobSpec spec = HalfSpec(kSteps);
  absl::StatusOr<std::string> job = cluster().Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<JobStatus> running = cluster().WaitForJob(
      *job, [](const JobStatus& st) { return st.state() == JOB_STATE_RUNNING; },
      kJobTimeout, "running");
  ASSERT_TRUE(running.ok()) << running.status();
  absl::StatusOr<int64_t> epoch = cluster().Switch(*job, SYNC_MODE_PS);
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 1);
  absl::StatusOr<JobStatus> end = cluster().WaitForJobEnd(*job, kJobTimeout);
  ASSERT_TRUE(end.ok()) << end.status();
  ASSERT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
  absl::StatusOr<std::vector<StepMetrics>> metrics = cluster().GetMetrics(*job);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  Trajectory trajectory;
  ASSERT_TRUE(InLockstep(*metrics, kRanks, kSteps, &trajectory));
  // The job acted on the request: its last step ran on the PS.
  EXPECT_EQ(end->switches_size(), 1);
  EXPECT_EQ(trajectory.mode.back(), SYNC_MODE_PS);
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
