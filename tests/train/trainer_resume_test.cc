// Resuming from a checkpoint (TrainerConfig.resume_from): a run that starts
// from the checkpoint of step s continues the run that wrote it bitwise,
// step by step (loss, parameter hash, path), on the ring, in PS mode and
// across scripted switches; a checkpoint that does not fit the job is
// refused before any step runs, naming the file and what differs.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/train/trainer_test_util.h"
#include "tests/util/status_matchers.h"
#include "worker/train/checkpoint.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

using ::gradsync::testing::ExpectAllOk;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::LoadOrDie;
using ::gradsync::testing::RunJob;
using ::gradsync::testing::RunJobPerRank;
using ::gradsync::testing::SmallMlpConfig;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int kWorld = 3;

class TrainerResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "/resume-", getpid(), "-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Adam (its step count moves with the state), checkpoints every 3 steps.
  TrainerConfig Config(const std::string& checkpoints) {
    TrainerConfig c = SmallMlpConfig();
    c.optimizer.kind = OptimizerKind::kAdam;
    c.optimizer.lr = 1e-3;
    c.checkpoint_dir = absl::StrCat(dir_, "/", checkpoints);
    c.checkpoint_every = 3;
    return c;
  }

  // Two parameter servers, and the job's PS settings pointing at them.
  void AddParameterServers(TrainerConfig* c) {
    while (servers_.size() < 2) {
      absl::StatusOr<std::unique_ptr<PsServer>> server =
          PsServer::Start("127.0.0.1:0");
      ASSERT_THAT(server, IsOk());
      addresses_.push_back((*server)->address());
      servers_.push_back(*std::move(server));
    }
    c->ps.addresses = addresses_;
    c->ps.job_id = absl::StrCat("job-", ++jobs_);
    c->ps.chunk_bytes = 512;
    c->ps.optimizer.set_name("adam");
    c->ps.optimizer.set_learning_rate(c->optimizer.lr);
  }

  std::string dir_;
  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<PsServer>> servers_;
  int jobs_ = 0;
};

// `resumed` ran steps [from, steps) of `full`: the same losses, hashes and
// paths, bitwise, on every rank, and the same final parameters.
void ExpectContinues(const JobOutcome& full, const JobOutcome& resumed,
                     int64_t from, int64_t steps) {
  ExpectAllOk(resumed);
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_EQ(resumed.metrics[r].size(), static_cast<size_t>(steps - from))
        << "rank " << r;
    for (int64_t s = from; s < steps; ++s) {
      const StepMetrics& a = full.metrics[r][s];
      const StepMetrics& b = resumed.metrics[r][s - from];
      ASSERT_EQ(b.step(), s) << "rank " << r;
      EXPECT_EQ(b.loss(), a.loss()) << "rank " << r << " step " << s;
      EXPECT_EQ(b.param_hash(), a.param_hash())
          << "rank " << r << " step " << s;
      EXPECT_EQ(b.mode(), a.mode()) << "rank " << r << " step " << s;
    }
    EXPECT_EQ(resumed.final_params[r], full.final_params[r]) << "rank " << r;
    EXPECT_EQ(resumed.results[r].test_accuracy, full.results[r].test_accuracy);
  }
}

TEST_F(TrainerResumeTest, Ring_ContinuesTheRunThatWroteTheCheckpoint) {
  const TrainerConfig config = Config("full");
  const TrainData data = LoadOrDie(config);
  const JobOutcome full = RunJob(config, data, kWorld);
  ExpectAllOk(full);

  TrainerConfig resume = Config("resumed");
  resume.resume_from = CheckpointPath(config.checkpoint_dir, 6);
  const JobOutcome resumed = RunJob(resume, data, kWorld);
  ExpectContinues(full, resumed, 6, config.steps);
  // Its own checkpoints are the full run's: parameters and Adam's state.
  const absl::StatusOr<Checkpoint> a =
      ReadCheckpoint(CheckpointPath(config.checkpoint_dir, 12));
  const absl::StatusOr<Checkpoint> b =
      ReadCheckpoint(CheckpointPath(resume.checkpoint_dir, 12));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(b->params, a->params);
  EXPECT_EQ(b->optimizer.step, 12u);
  EXPECT_EQ(b->optimizer.buffers, a->optimizer.buffers);
  EXPECT_FALSE(
      std::filesystem::exists(CheckpointPath(resume.checkpoint_dir, 6)));
}

// Without shared storage only the host that wrote the checkpoint has it:
// here rank 2 alone can read it (the others are given a path that does not
// exist on their "host"), and the run still continues bitwise on every rank.
TEST_F(TrainerResumeTest, FileOnOneRanksHostOnly_EveryRankContinues) {
  const TrainerConfig config = Config("full");
  const TrainData data = LoadOrDie(config);
  const JobOutcome full = RunJob(config, data, kWorld);
  ExpectAllOk(full);

  std::vector<TrainerConfig> configs(kWorld, Config("resumed"));
  for (int r = 0; r < kWorld; ++r) {
    configs[r].resume_from =
        r == 2 ? CheckpointPath(config.checkpoint_dir, 6)
               : absl::StrCat(dir_, "/not-on-this-host/step-6.ckpt");
  }
  ExpectContinues(full, RunJobPerRank(configs, data), 6, config.steps);
}

// Ring, then PS from step 4, then the ring again from step 9. Resumed from
// step 3 (ring, before both switches), 6 (inside PS mode: the shards are
// seeded from the checkpoint) and 9 (where the ring takes over again).
TEST_F(TrainerResumeTest, AcrossScriptedSwitches_ContinuesInTheRightMode) {
  TrainerConfig config = Config("full");
  AddParameterServers(&config);
  config.switches = {{4, SyncPath::kPs}, {9, SyncPath::kRing}};
  const TrainData data = LoadOrDie(config);
  const JobOutcome full = RunJob(config, data, kWorld);
  ExpectAllOk(full);
  ASSERT_EQ(full.metrics[0][6].mode(), SYNC_MODE_PS);
  for (const int64_t from : {3, 6, 9}) {
    SCOPED_TRACE(absl::StrCat("resumed from step ", from));
    TrainerConfig resume = Config(absl::StrCat("resumed-", from));
    AddParameterServers(&resume);
    resume.switches = config.switches;
    resume.resume_from = CheckpointPath(config.checkpoint_dir, from);
    ExpectContinues(full, RunJob(resume, data, kWorld), from, config.steps);
  }
}

TEST_F(TrainerResumeTest, StartingInPsMode_ResumesInPsMode) {
  TrainerConfig config = Config("full");
  AddParameterServers(&config);
  config.initial_path = SyncPath::kPs;
  const TrainData data = LoadOrDie(config);
  const JobOutcome full = RunJob(config, data, kWorld);
  ExpectAllOk(full);
  TrainerConfig resume = Config("resumed");
  AddParameterServers(&resume);
  resume.initial_path = SyncPath::kPs;
  resume.resume_from = CheckpointPath(config.checkpoint_dir, 3);
  ExpectContinues(full, RunJob(resume, data, kWorld), 3, config.steps);
}

TEST_F(TrainerResumeTest, CheckpointThatDoesNotFit_RefusedBeforeAnyStep) {
  TrainerConfig writer = Config("written");
  const TrainData data = LoadOrDie(writer);
  ExpectAllOk(RunJob(writer, data, 1));
  const std::string path = CheckpointPath(writer.checkpoint_dir, 6);

  struct Case {
    const char* name;
    TrainerConfig config;
    absl::StatusCode code;
    const char* says;
  };
  TrainerConfig missing = writer;
  missing.resume_from = path + ".nope";
  TrainerConfig other_model = writer;
  other_model.layer_sizes = {32, 20, 16, 10};
  other_model.resume_from = path;
  TrainerConfig other_optimizer = writer;
  other_optimizer.optimizer.kind = OptimizerKind::kMomentum;
  other_optimizer.resume_from = path;
  TrainerConfig done_already = writer;
  done_already.steps = 6;
  done_already.resume_from = path;
  for (const Case& c :
       {Case{"missing", missing, absl::StatusCode::kNotFound,
             "no worker could read the checkpoint"},
        Case{"other model", other_model, absl::StatusCode::kFailedPrecondition,
             "but the job's model has"},
        Case{"other optimizer", other_optimizer,
             absl::StatusCode::kFailedPrecondition,
             "does not fit the job's optimizer"},
        Case{"done already", done_already,
             absl::StatusCode::kFailedPrecondition,
             "written after step 6 and the job has 6 steps"}}) {
    SCOPED_TRACE(c.name);
    TrainerConfig config = c.config;
    config.checkpoint_dir = absl::StrCat(dir_, "/refused");
    const JobOutcome out = RunJob(config, LoadOrDie(config), 2);
    for (int r = 0; r < 2; ++r) {
      EXPECT_THAT(out.status[r],
                  StatusIs(c.code, AllOf(HasSubstr(config.resume_from),
                                         HasSubstr(c.says))))
          << "rank " << r;
      EXPECT_TRUE(out.metrics[r].empty()) << "rank " << r;
    }
    EXPECT_FALSE(std::filesystem::exists(config.checkpoint_dir));
  }
}

}  // namespace
}  // namespace gradsync
