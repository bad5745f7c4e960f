// Checkpoints under the worker's --checkpoint-root for the whole job
// (TrainerConfig.checkpoint_roots; issue 43, finding 3): the checkpoint
// directory, or one of its parents, swapped for a link or moved while the
// job runs fails the job's next checkpoint, naming the directory, and
// nothing lands outside the root; a link below the root is refused for
// writing and for resuming; checkpoints and resuming under a root give the
// same bytes as without one.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/trainer_test_util.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"
#include "worker/train/checkpoint.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;
using ::gradsync::testing::ExpectAllOk;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::LoadOrDie;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::RunJob;
using ::gradsync::testing::SmallMlpConfig;
using ::gradsync::testing::SmallPipelineOptions;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr int kWorld = 2;

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TrainerCheckpointRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    base_ = dir_.path();
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    fs::create_directories(root_);
    fs::create_directories(outside_);
  }

  // Checkpoints every 2 steps of 12 in `dir`, confined to root_.
  TrainerConfig Config(const std::string& dir) {
    TrainerConfig c = SmallMlpConfig();
    c.checkpoint_dir = dir;
    c.checkpoint_every = 2;
    c.checkpoint_roots = {root_};
    return c;
  }

  // Runs `config` on kWorld ranks; rank 0 calls `after(done)` on its own
  // thread right after it reported the checkpoint of `done` steps.
  JobOutcome RunWithHook(const TrainerConfig& config,
                         const std::function<void(int64_t)>& after) {
    const TrainData data = LoadOrDie(config);
    RankGroup group(kWorld, SmallPipelineOptions());
    JobOutcome out;
    out.metrics.resize(kWorld);
    out.status = group.Run([&](int r) -> absl::Status {
      absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
          config, data, &group.comm(r),
          [&out, &after, r](const StepMetrics& m) {
            out.metrics[r].push_back(m);
            if (r == 0 && !m.checkpoint().empty()) after(m.step() + 1);
          },
          nullptr);
      if (!trainer.ok()) return trainer.status();
      return (*trainer)->Run().status();
    });
    return out;
  }

  ::gradsync::testing::TempDir dir_{"ckroots"};
  std::string base_, root_, outside_;
};

// The finding itself: the directory renamed away and a link to a directory
// outside the root put in its place after the checkpoint of step 4. The
// checkpoint of step 6 fails the job naming the directory; the link's
// target stays empty, and the moved directory holds what was written
// before the swap only.
TEST_F(TrainerCheckpointRootsTest,
       DirectorySwappedForALinkMidJob_NextCheckpointFails) {
  const std::string dir = root_ + "/job/ckpt";
  const JobOutcome out = RunWithHook(Config(dir), [&](int64_t done) {
    if (done != 4) return;
    fs::rename(dir, dir + ".moved");
    fs::create_symlink(outside_, dir);
  });
  EXPECT_THAT(
      out.status[0],
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("rank 0, step 5, checkpoint"),
                     HasSubstr(dir + " was replaced by a symbolic link or "
                                     "moved since the job started"),
                     HasSubstr(dir + " is a symbolic link"),
                     HasSubstr("step-6.ckpt was not written"))));
  EXPECT_FALSE(out.status[1].ok());  // the job fails, not only rank 0
  EXPECT_THAT(Names(outside_), IsEmpty());
  EXPECT_THAT(Names(dir + ".moved"),
              UnorderedElementsAre("step-2.ckpt", "step-4.ckpt"));
}

// A link in an intermediate component: the job's parent directory swapped
// for a link to an outside tree that has the same layout.
TEST_F(TrainerCheckpointRootsTest,
       ParentSwappedForALinkMidJob_NextCheckpointFails) {
  const std::string dir = root_ + "/jobs/a/ckpt";
  fs::create_directories(outside_ + "/a/ckpt");
  const JobOutcome out = RunWithHook(Config(dir), [&](int64_t done) {
    if (done != 2) return;
    fs::rename(root_ + "/jobs", root_ + "/jobs.moved");
    fs::create_symlink(outside_, root_ + "/jobs");
  });
  EXPECT_THAT(out.status[0],
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("rank 0, step 3, checkpoint"),
                             HasSubstr(dir + " was replaced"),
                             HasSubstr(root_ + "/jobs is a symbolic link"))));
  EXPECT_THAT(Names(outside_ + "/a/ckpt"), IsEmpty());
  EXPECT_THAT(Names(root_ + "/jobs.moved/a/ckpt"),
              UnorderedElementsAre("step-2.ckpt"));
}

// Holding the directory's descriptor alone is not enough: a directory
// moved out of the root (same file system) would take the writes with it.
// The next checkpoint fails instead, and nothing follows it out.
TEST_F(TrainerCheckpointRootsTest,
       DirectoryMovedOutOfTheRootMidJob_NextOneFails) {
  const std::string dir = root_ + "/ckpt";
  const JobOutcome out = RunWithHook(Config(dir), [&](int64_t done) {
    if (done == 4) fs::rename(dir, outside_ + "/ckpt");
  });
  EXPECT_THAT(out.status[0],
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("rank 0, step 5, checkpoint"),
                             HasSubstr(dir + " does not exist"))));
  EXPECT_THAT(Names(outside_ + "/ckpt"),
              UnorderedElementsAre("step-2.ckpt", "step-4.ckpt"));
  EXPECT_FALSE(fs::exists(dir));
}

// No link below the root, not even one that stays inside it: a checkpoint
// directory reached through one fails the trainer's setup, and a resume
// file reached through one (in or out of the root) is not read.
TEST_F(TrainerCheckpointRootsTest,
       LinkBelowTheRoot_RefusedForWritingAndResuming) {
  TrainerConfig writer = Config(root_ + "/real/ckpt");
  ExpectAllOk(RunJob(writer, LoadOrDie(writer), kWorld));
  fs::create_symlink(root_ + "/real", root_ + "/in");
  fs::copy(root_ + "/real", outside_, fs::copy_options::recursive);
  fs::create_symlink(outside_, root_ + "/out");

  // One rank: a peer would wait for the failed one until its timeout (the
  // daemon aborts the job's communicators when a rank's setup fails).
  TrainerConfig through = Config(root_ + "/in/ckpt");
  const JobOutcome linked = RunJob(through, LoadOrDie(through), 1);
  EXPECT_THAT(linked.status[0],
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("checkpoint.directory"),
                             HasSubstr(root_ + "/in is a symbolic link"))));

  for (const char* link : {"/in", "/out"}) {
    TrainerConfig resume = Config(root_ + "/resumed");
    resume.resume_from = absl::StrCat(root_, link, "/ckpt/step-6.ckpt");
    const JobOutcome out = RunJob(resume, LoadOrDie(resume), kWorld);
    for (int r = 0; r < kWorld; ++r) {
      EXPECT_FALSE(out.status[r].ok()) << link << " rank " << r;
      EXPECT_THAT(
          out.status[r].message(),
          AllOf(HasSubstr("cannot resume"),
                HasSubstr(absl::StrCat(root_, link, " is a symbolic link"))))
          << link << " rank " << r;
    }
  }
}

// Under a root, the files are byte for byte those of a job without one,
// and a job resumed from one of them ends where the full run did.
TEST_F(TrainerCheckpointRootsTest, UnderARoot_SameBytesAndResumeAsWithout) {
  TrainerConfig plain = Config(base_ + "/plain");
  plain.checkpoint_roots.clear();
  const JobOutcome want = RunJob(plain, LoadOrDie(plain), kWorld);
  ExpectAllOk(want);
  TrainerConfig rooted = Config(root_ + "/job/ckpt");
  ExpectAllOk(RunJob(rooted, LoadOrDie(rooted), kWorld));
  for (int64_t done = 2; done <= 12; done += 2) {
    const std::string file = CheckpointPath(rooted.checkpoint_dir, done);
    ASSERT_TRUE(fs::exists(file)) << file;
    EXPECT_EQ(Bytes(file), Bytes(CheckpointPath(plain.checkpoint_dir, done)))
        << file;
  }
  TrainerConfig resume = Config(root_ + "/job/resumed");
  resume.resume_from = CheckpointPath(rooted.checkpoint_dir, 6);
  const JobOutcome resumed = RunJob(resume, LoadOrDie(resume), kWorld);
  ExpectAllOk(resumed);
  EXPECT_EQ(resumed.final_params[0], want.final_params[0]);
  EXPECT_EQ(Bytes(CheckpointPath(resume.checkpoint_dir, 12)),
            Bytes(CheckpointPath(plain.checkpoint_dir, 12)));
  EXPECT_FALSE(fs::exists(CheckpointPath(resume.checkpoint_dir, 6)));
}

}  // namespace
}  // namespace gradsync
