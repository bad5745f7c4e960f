// Resuming through the daemons: a PS job that switches to the ring writes
// checkpoints on rank 0's worker; a second job submitted with the spec's
// checkpoint.resumeFrom (what `gradsync resume` sends) starts from one
// written in PS mode and reports, step by step and on every rank, the
// losses and parameter hashes of the first job.
#include <unistd.h>

#include <filesystem>
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
    absl::StatusOr<std::string> job = cluster().Submit(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    absl::StatusOr<JobStatus> status =
        cluster().WaitForJobEnd(*job, kJobTimeout);
    ASSERT_TRUE(status.ok()) << status.status();
    ASSERT_EQ(status->state(), JOB_STATE_SUCCEEDED) << status->message();
    *end = *status;
    absl::StatusOr<std::vector<StepMetrics>> metrics =
        cluster().GetMetrics(*job);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    for (const StepMetrics& m : *metrics) {
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
  if (!HaveFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
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

}  // namespace
}  // namespace testing
}  // namespace gradsync
