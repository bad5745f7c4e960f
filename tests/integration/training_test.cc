// Integration tests of the ring training path: a real gradsync-coordinator
// and two gradsync-worker daemons (cpu:2 each, so four CPU ranks over two
// processes) on loopback, driven over gRPC as the CLI drives them.
//
// Fashion-MNIST cases skip when Debian's dataset-fashion-mnist is missing;
// the rest fall back to the synthetic dataset. Under scripts/test.sh a
// missing dataset fails them instead (tests/util/fashion_mnist.h).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/integration/lockstep.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

constexpr int kRanks = 4;
// Generous: the machine running the tests may be busy with other work.
constexpr absl::Duration kShortJobTimeout = absl::Seconds(90);
constexpr absl::Duration kTrainingTimeout = absl::Seconds(240);
constexpr absl::Duration kIdleTimeout = absl::Seconds(30);

// Fashion-MNIST when installed, else the synthetic task of the same shape.
JobSpec SmallMlpSpec(int num_workers, int64_t batch_size, int64_t steps,
                     uint64_t seed) {
  JobSpec spec =
      FashionMnistSpec(num_workers, {784, 128, 10}, batch_size, steps,
                       /*learning_rate=*/1e-3, seed);
  if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
  return spec;
}

// The worker ids hosting the job's ranks, in rank order.
std::vector<std::string> Placement(const JobStatus& status) {
  std::vector<std::string> workers(status.ranks_size());
  for (const RankPlacement& p : status.ranks()) {
    if (p.rank() >= 0 && p.rank() < status.ranks_size()) {
      workers[p.rank()] = p.worker_id();
    }
  }
  return workers;
}

class TrainingTest : public ClusterTest {};

// The accuracy job: 784-256-256-10 with Adam (lr 1e-3), global batch 128,
// 938 steps (2 epochs) reached test accuracies 0.862 to 0.869 with seeds
// 1 to 4 (0.866 with this one); the bound is 0.85. About 10 s on 2 cores.
TEST_F(TrainingTest, FourRanks_Succeeds_AccurateAndIdenticalAfterEveryStep) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  constexpr int64_t kSteps = 938;
  JobSpec spec =
      FashionMnistSpec(kRanks, {784, 256, 256, 10}, /*batch_size=*/128, kSteps,
                       /*learning_rate=*/1e-3, /*seed=*/1);
  spec.set_eval_every_steps(469);
  absl::StatusOr<std::string> job = cluster().Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();

  absl::StatusOr<JobStatus> end =
      cluster().WaitForJobEnd(*job, kTrainingTimeout);
  ASSERT_TRUE(end.ok()) << end.status();
  ASSERT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
  EXPECT_EQ(end->step(), kSteps - 1);
  std::cout << "job " << *job << ": test accuracy " << end->test_accuracy()
            << ", test loss " << end->test_loss() << " after " << kSteps
            << " steps\n";
  EXPECT_GE(end->test_accuracy(), 0.85) << "test loss " << end->test_loss();

  // Two ranks on each worker process: the ring crosses processes.
  const std::vector<std::string> placement = Placement(*end);
  EXPECT_EQ(std::set<std::string>(placement.begin(), placement.end()).size(),
            2u)
      << absl::StrJoin(placement, ", ");

  absl::StatusOr<std::vector<StepMetrics>> metrics = cluster().GetMetrics(*job);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  Trajectory trajectory;
  ASSERT_TRUE(InLockstep(*metrics, kRanks, kSteps, &trajectory));
  // The parameters change every step (the hash is not stuck).
  EXPECT_EQ(std::set<uint64_t>(trajectory.param_hash.begin(),
                               trajectory.param_hash.end())
                .size(),
            trajectory.param_hash.size());
  EXPECT_LT(trajectory.loss.back(), trajectory.loss.front());
  // Evaluation steps carry the test accuracy, equal on every rank.
  for (const StepMetrics& m : *metrics) {
    if (m.step() == 468 || m.step() == kSteps - 1) {
      EXPECT_GT(m.test_accuracy(), 0.7)
          << "rank " << m.rank() << " step " << m.step();
    }
  }
  for (const StepMetrics& m : *metrics) {
    if (m.step() == kSteps - 1) {
      EXPECT_EQ(m.test_accuracy(), end->test_accuracy()) << "rank " << m.rank();
    }
  }
}

// docs/architecture.md invariant 2: N ranks with global batch B follow 1 rank
// with batch B (the union of the ranks' shards is the 1-rank batch; only the
// order of the float sums differs).
TEST_F(TrainingTest, FourRanks_FollowOneRankWithTheSameGlobalBatch) {
  constexpr int64_t kSteps = 20;
  constexpr int64_t kBatch = 256;
  const JobSpec one = SmallMlpSpec(1, kBatch, kSteps, /*seed=*/3);
  const JobSpec four = SmallMlpSpec(kRanks, kBatch, kSteps, /*seed=*/3);

  Trajectory trajectories[2];
  int index = 0;
  for (const JobSpec* spec : {&one, &four}) {
    SCOPED_TRACE(absl::StrFormat("%d rank(s)", spec->num_workers()));
    absl::StatusOr<std::string> job = cluster().Submit(*spec);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobStatus> end =
        cluster().WaitForJobEnd(*job, kShortJobTimeout);
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
    absl::StatusOr<std::vector<StepMetrics>> metrics =
        cluster().GetMetrics(*job);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    ASSERT_TRUE(InLockstep(*metrics, spec->num_workers(), kSteps,
                           &trajectories[index++]));
  }
  double max_relative = 0;
  int64_t worst_step = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    const double a = trajectories[0].loss[step];
    const double b = trajectories[1].loss[step];
    ASSERT_TRUE(std::isfinite(a) && std::isfinite(b)) << "step " << step;
    const double relative = std::abs(a - b) / std::max(std::abs(a), 1e-12);
    if (relative > max_relative) {
      max_relative = relative;
      worst_step = step;
    }
  }
  std::cout << "largest relative loss difference, 1 vs 4 ranks: "
            << max_relative << " at step " << worst_step << "\n";
  EXPECT_LT(max_relative, 1e-3)
      << "at step " << worst_step << ": 1 rank "
      << trajectories[0].loss[worst_step] << ", 4 ranks "
      << trajectories[1].loss[worst_step];
  // The model learned something in those steps, in both runs.
  EXPECT_LT(trajectories[1].loss.back(), trajectories[1].loss.front());
}

// docs/architecture.md invariant 3, and the daemons' reuse: the same workers
// run three jobs in a row without a restart; the first two (same spec and seed)
// end with bitwise-identical parameters after every step, the third (another
// seed) does not.
TEST_F(TrainingTest, SameSpecAndSeedTwice_BitwiseIdentical_SameWorkersInARow) {
  constexpr int64_t kSteps = 30;
  const JobSpec spec = SmallMlpSpec(kRanks, /*batch_size=*/128, kSteps, 11);
  const JobSpec other_seed = [&] {
    JobSpec s = spec;
    s.set_seed(12);
    return s;
  }();

  std::vector<Trajectory> trajectories;
  std::vector<std::vector<std::string>> placements;
  for (const JobSpec* s : {&spec, &spec, &other_seed}) {
    SCOPED_TRACE(absl::StrFormat("job %d", trajectories.size() + 1));
    absl::StatusOr<std::string> job = cluster().Submit(*s);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobStatus> end =
        cluster().WaitForJobEnd(*job, kShortJobTimeout);
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
    placements.push_back(Placement(*end));
    absl::StatusOr<std::vector<StepMetrics>> metrics =
        cluster().GetMetrics(*job);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    trajectories.emplace_back();
    ASSERT_TRUE(InLockstep(*metrics, kRanks, kSteps, &trajectories.back()));
    // The workers are free again for the next job.
    ASSERT_TRUE(cluster().WaitForIdleWorkers(kIdleTimeout).ok());
  }
  EXPECT_EQ(placements[0], placements[1]);
  EXPECT_EQ(placements[1], placements[2]);
  EXPECT_EQ(trajectories[0].param_hash, trajectories[1].param_hash);
  EXPECT_EQ(trajectories[0].loss, trajectories[1].loss);
  EXPECT_NE(trajectories[0].param_hash.back(),
            trajectories[2].param_hash.back());

  // Each daemon ran every job and still exits cleanly on SIGTERM.
  absl::StatusOr<ListWorkersResponse> workers = cluster().ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_EQ(workers->workers_size(), 2);
  for (int i = 0; i < cluster().num_workers(); ++i) {
    EXPECT_EQ(cluster().worker(i).Stop(absl::Seconds(15)),
              "exited with status 0")
        << cluster().worker(i).name();
  }
}

// JobSpec.ring_algorithm end to end: the coordinator refuses an unknown
// name at submit; jobs forcing "ring" and "hierarchical" on the two hosts
// of two ranks (node-a, node-b) train in lockstep, and every rank's worker
// log says the hierarchy was forced (small buckets: auto would run flat).
TEST_F(TrainingTest, ForcedRingAlgorithm_RefusedWhenUnknown_RingAndHierTrain) {
  constexpr int64_t kSteps = 10;
  JobSpec bad = SmallMlpSpec(kRanks, /*batch_size=*/64, kSteps, 5);
  bad.set_ring_algorithm("butterfly");
  EXPECT_THAT(cluster().Submit(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("ringAlgorithm")));
  for (const char* algorithm : {"ring", "hierarchical"}) {
    SCOPED_TRACE(algorithm);
    JobSpec spec = SmallMlpSpec(kRanks, /*batch_size=*/64, kSteps, 5);
    spec.set_ring_algorithm(algorithm);
    absl::StatusOr<std::string> job = cluster().Submit(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobStatus> end =
        cluster().WaitForJobEnd(*job, kShortJobTimeout);
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
    EXPECT_EQ(end->spec().ring_algorithm(), algorithm);
    absl::StatusOr<std::vector<StepMetrics>> metrics =
        cluster().GetMetrics(*job);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    Trajectory trajectory;
    EXPECT_TRUE(InLockstep(*metrics, kRanks, kSteps, &trajectory));
    ASSERT_TRUE(cluster().WaitForIdleWorkers(kIdleTimeout).ok());
  }
  for (int i = 0; i < cluster().num_workers(); ++i) {
    const std::string log = cluster().worker(i).ReadLog();
    EXPECT_THAT(log, ::testing::HasSubstr("ring all-reduce (forced)"))
        << cluster().worker(i).name();
    EXPECT_THAT(log, ::testing::HasSubstr(
                         "2 hosts of 2+2 ranks: hierarchical all-reduce "
                         "(forced)"))
        << cluster().worker(i).name();
  }
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
