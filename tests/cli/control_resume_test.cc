// gradsync resume against the fake coordinator: the new job is the old
// one's spec starting from its newest checkpoint (or --from), with --steps
// raising its length; jobs that cannot be resumed are refused with what to
// do, and nothing is submitted. Also: following a job into the job that
// restarts it (JobSpec.max_restarts).
#include <string>
#include <vector>

#include "cli/control/job_commands.h"
#include "cli/framework/command_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/control_test_fixture.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using test_support::ControlCommandsTest;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST_F(ControlCommandsTest, Resume_FailedJob_SubmitsItsSpecFromItsCheckpoint) {
  EXPECT_EQ(Run(RunResume, {"j-ckpt"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("submitted job j-1: j-ckpt resumed from "
                                     "/ck/step-20.ckpt\n"));
  ASSERT_EQ(fake_.submitted().size(), 1u);
  const JobSpec spec = fake_.submitted()[0];
  EXPECT_EQ(spec.checkpoint().resume_from(), "/ck/step-20.ckpt");
  // Everything else is the old job's spec.
  EXPECT_EQ(spec.name(), "fmnist");
  EXPECT_EQ(spec.num_workers(), 2);
  EXPECT_EQ(spec.steps(), 3);
  EXPECT_EQ(spec.checkpoint().directory(), "/ck");

  EXPECT_EQ(Run(RunResume, {"j-ckpt", "--from", "/other/step-10.ckpt",
                            "--steps", "500", "--workers", "1", "--json"}),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(),
            "{\"jobId\":\"j-1\",\"resumes\":\"j-ckpt\",\"resumeFrom\":\"/other/"
            "step-10.ckpt\"}\n");
  ASSERT_EQ(fake_.submitted().size(), 2u);
  EXPECT_EQ(fake_.submitted()[1].checkpoint().resume_from(),
            "/other/step-10.ckpt");
  EXPECT_EQ(fake_.submitted()[1].steps(), 500);
  EXPECT_EQ(fake_.submitted()[1].num_workers(), 1);
}

TEST_F(ControlCommandsTest,
       Resume_JobWithoutItsOwnCheckpoint_UsesTheOneItStartedFrom) {
  // A restart that was cancelled while it waited for devices, resumed on
  // the workers that are left.
  EXPECT_EQ(Run(RunResume, {"j-waited", "--workers", "1"}), kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("submitted job j-1: j-waited resumed from "
                                     "/ck/step-20.ckpt\n"));
  ASSERT_EQ(fake_.submitted().size(), 1u);
  EXPECT_EQ(fake_.submitted()[0].checkpoint().resume_from(),
            "/ck/step-20.ckpt");
  EXPECT_EQ(fake_.submitted()[0].num_workers(), 1);
}

TEST_F(ControlCommandsTest, Resume_SucceededJob_NeedsMoreSteps) {
  EXPECT_EQ(Run(RunResume, {"j-1"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("pass --steps N (more than 3)"));
  EXPECT_TRUE(fake_.submitted().empty());
  EXPECT_EQ(Run(RunResume, {"j-1", "--steps", "6"}), kExitOk) << err_.str();
  ASSERT_EQ(fake_.submitted().size(), 1u);
  EXPECT_EQ(fake_.submitted()[0].steps(), 6);
  EXPECT_EQ(fake_.submitted()[0].checkpoint().resume_from(), "/ck/step-3.ckpt");
}

TEST_F(ControlCommandsTest, Resume_Refused_SaysWhatToDoAndSubmitsNothing) {
  EXPECT_EQ(Run(RunResume, {"j-run"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("job j-run is RUNNING; resume it once it "
                                    "ended, or stop it first: gradsync cancel "
                                    "j-run"));
  EXPECT_EQ(Run(RunResume, {"j-fail"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("job j-fail reported no checkpoint (it "
                                    "ended before writing its first); name "
                                    "one with --from FILE"));
  EXPECT_EQ(Run(RunResume, {"j-404"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("no job 'j-404'"));
  EXPECT_EQ(Run(RunResume, {}), kExitUsage);
  EXPECT_EQ(Run(RunResume, {"j-ckpt", "--steps", "0"}), kExitUsage);
  EXPECT_TRUE(fake_.submitted().empty());
}

TEST_F(ControlCommandsTest, Watch_RestartedJob_FollowsTheRestart) {
  EXPECT_EQ(Run(RunWatch, {"j-restarted", "--every", "1"}), kExitOk)
      << err_.str();
  const std::string out = out_.str();
  const size_t restarted = out.find("job j-restarted was restarted as j-1");
  ASSERT_NE(restarted, std::string::npos) << out;
  EXPECT_NE(out.find("FAILED"), std::string::npos);
  EXPECT_NE(out.find("following job j-1", restarted), std::string::npos);
  EXPECT_NE(out.find("SUCCEEDED", restarted), std::string::npos);
}

TEST_F(ControlCommandsTest, Resume_Follow_FollowsTheNewJob) {
  EXPECT_EQ(Run(RunResume, {"j-ckpt", "--follow", "--every", "1"}), kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("following job j-1"));
  EXPECT_THAT(out_.str(), HasSubstr("SUCCEEDED"));
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
