// Resuming through the daemons: a PS job that switches to the ring writes
// checkpoints on rank 0's worker; a second job submitted with the spec's
// checkpoint.resumeFrom (what `gradsync resume` sends) starts from one
// written in PS mode and reports, step by step and on every rank, the
// losses and parameter hashes of the first job. And JobSpec.max_restarts:
// a job whose parameter server is killed is restarted by the coordinator
// from its last checkpoint on the other server, and ends with the
// parameters of a run that was never interrupted.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"

namespace gradsync {
namespace testing {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kSteps = 20;
constexpr absl::Duration kJobTimeout = absl::Seconds(180);
constexpr absl::Duration kIdleTimeout = absl::Seconds(30);

class ResumeTest : public ClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.workers = 2;
    options.devices_per_worker = 2;
    options.parameter_servers = 1;
    return options;
  }

  void TearDown() override {
    std::filesystem::remove_all(dir_);
    ClusterTest::TearDown();
  }

  // Runs `spec` to SUCCEEDED; returns its status and (rank, step) metrics.
  void RunToEnd(const JobSpec& spec, JobStatus* end,
                std::map<std::pair<int, int64_t>, StepMetrics>* steps) {
    absl::StatusOr<TestCluster::FinishedJob> job =
        cluster().RunToSuccess(spec, kJobTimeout);
    ASSERT_TRUE(job.ok()) << job.status();
    *end = job->status;
    for (const StepMetrics& m : job->metrics) {
      ASSERT_TRUE(steps->emplace(std::make_pair(m.rank(), m.step()), m).second)
          << "rank " << m.rank() << " reported step " << m.step() << " twice";
    }
    ASSERT_TRUE(cluster().WaitForIdleWorkers(kIdleTimeout).ok());
  }

  const std::string dir_ =
      absl::StrCat(::testing::TempDir(), "/gradsync-resume-", getpid());
};

TEST_F(ResumeTest, FromAPsModeCheckpoint_ContinuesTheFullRunBitwise) {
  JobSpec spec = FashionMnistSpec(kRanks, {784, 64, 10}, /*batch_size=*/128,
                                  kSteps, /*learning_rate=*/1e-3, /*seed=*/5);
  if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
  spec.set_mode(SYNC_MODE_PS);
  spec.mutable_ps()->set_shards(2);
  SwitchSpec* to_ring = spec.add_switches();
  to_ring->set_step(14);
  to_ring->set_mode(SYNC_MODE_RING);
  spec.mutable_checkpoint()->set_directory(absl::StrCat(dir_, "/full"));
  spec.mutable_checkpoint()->set_every_steps(5);

  JobStatus full_end;
  std::map<std::pair<int, int64_t>, StepMetrics> full;
  RunToEnd(spec, &full_end, &full);
  if (HasFatalFailure()) return;
  EXPECT_EQ(full_end.last_checkpoint(),
            absl::StrCat(dir_, "/full/step-20.ckpt"));
  EXPECT_EQ(full_end.last_checkpoint_steps(), kSteps);
  ASSERT_EQ(full.at({0, 10}).mode(), SYNC_MODE_PS);
  EXPECT_EQ(full.at({0, 9}).checkpoint(),
            absl::StrCat(dir_, "/full/step-10.ckpt"));

  JobSpec resume = spec;
  resume.mutable_checkpoint()->set_directory(absl::StrCat(dir_, "/resumed"));
  resume.mutable_checkpoint()->set_resume_from(
      absl::StrCat(dir_, "/full/step-10.ckpt"));
  JobStatus resumed_end;
  std::map<std::pair<int, int64_t>, StepMetrics> resumed;
  RunToEnd(resume, &resumed_end, &resumed);
  if (HasFatalFailure()) return;
  ASSERT_EQ(resumed.size(), static_cast<size_t>(kRanks * (kSteps - 10)));
  EXPECT_EQ(resumed_end.first_step(), 10);
  EXPECT_EQ(full_end.first_step(), 0);
  for (const auto& [key, m] : resumed) {
    const auto& [rank, step] = key;
    ASSERT_GE(step, 10) << "rank " << rank;
    const StepMetrics& a = full.at(key);
    EXPECT_EQ(m.loss(), a.loss()) << "rank " << rank << " step " << step;
    EXPECT_EQ(m.param_hash(), a.param_hash())
        << "rank " << rank << " step " << step;
    EXPECT_EQ(m.mode(), a.mode()) << "rank " << rank << " step " << step;
  }
  EXPECT_EQ(resumed_end.test_accuracy(), full_end.test_accuracy());
}

class RestartTest : public ResumeTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options = ResumeTest::Options();
    options.parameter_servers = 2;
    // A short lease: the restart waits one out.
    options.lease_ms = 2500;
    return options;
  }
};

TEST_F(RestartTest, PsKilledMidJob_RestartsFromItsCheckpointAndFinishes) {
  constexpr int64_t kLongSteps = 1500;
  JobSpec spec = FashionMnistSpec(kRanks, {784, 64, 10}, /*batch_size=*/128,
                                  kLongSteps, /*learning_rate=*/1e-3,
                                  /*seed=*/9);
  if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
  spec.set_mode(SYNC_MODE_PS);
  spec.mutable_ps()->set_shards(1);
  spec.mutable_checkpoint()->set_every_steps(50);

  // The run nothing interrupts.
  JobSpec reference = spec;
  reference.mutable_checkpoint()->set_directory(absl::StrCat(dir_, "/ref"));
  JobStatus reference_end;
  std::map<std::pair<int, int64_t>, StepMetrics> reference_steps;
  RunToEnd(reference, &reference_end, &reference_steps);
  if (HasFatalFailure()) return;

  spec.mutable_checkpoint()->set_directory(absl::StrCat(dir_, "/run"));
  spec.set_max_restarts(1);
  absl::StatusOr<std::string> job = cluster().Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<JobStatus> stepping = cluster().WaitForJob(
      *job, [](const JobStatus& s) { return s.last_checkpoint_steps() >= 100; },
      kJobTimeout, "two checkpoints in PS mode");
  ASSERT_TRUE(stepping.ok()) << stepping.status();
  ASSERT_EQ(stepping->ps_addresses_size(), 1);
  const int victim = cluster().ParameterServerAt(stepping->ps_addresses(0));
  ASSERT_GE(victim, 0) << "no server at " << stepping->ps_addresses(0);
  cluster().parameter_server(victim).Signal(SIGKILL);

  absl::StatusOr<JobStatus> failed = cluster().WaitForJobEnd(*job, kJobTimeout);
  ASSERT_TRUE(failed.ok()) << failed.status();
  ASSERT_EQ(failed->state(), JOB_STATE_FAILED);
  ASSERT_FALSE(failed->restarted_as().empty()) << failed->message();
  std::cout << failed->job_id() << ": " << failed->message() << "\n";
  absl::StatusOr<JobStatus> restarted =
      cluster().WaitForJobEnd(failed->restarted_as(), kJobTimeout);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_EQ(restarted->state(), JOB_STATE_SUCCEEDED) << restarted->message();
  EXPECT_EQ(restarted->restart_of(), *job);
  EXPECT_EQ(restarted->spec().checkpoint().resume_from(),
            failed->last_checkpoint());
  EXPECT_NE(restarted->ps_addresses(0), stepping->ps_addresses(0));

  absl::StatusOr<std::vector<StepMetrics>> metrics =
      cluster().GetMetrics(restarted->job_id());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  int64_t first = kLongSteps;
  int compared = 0;
  for (const StepMetrics& m : *metrics) {
    first = std::min(first, m.step());
    if (m.step() != kLongSteps - 1) continue;
    const StepMetrics& want = reference_steps.at({m.rank(), m.step()});
    EXPECT_EQ(m.param_hash(), want.param_hash()) << "rank " << m.rank();
    EXPECT_EQ(m.loss(), want.loss()) << "rank " << m.rank();
    ++compared;
  }
  EXPECT_EQ(compared, kRanks);
  EXPECT_EQ(first, failed->last_checkpoint_steps());
  EXPECT_EQ(restarted->first_step(), first);
  EXPECT_EQ(restarted->test_accuracy(), reference_end.test_accuracy());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
