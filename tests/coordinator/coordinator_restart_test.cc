// JobSpec.max_restarts: a job that fails is submitted again as a new job,
// from its newest checkpoint, a lease later (so that the daemons that
// failed it are known lost), at most max_restarts times; cancelled and
// succeeded jobs are not restarted.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

using RestartTest = CoordinatorTest;

JobSpec RestartingSpec(int num_workers, int max_restarts) {
  JobSpec spec = ValidSpec(num_workers);
  spec.mutable_checkpoint()->set_directory("/ckpt");
  spec.mutable_checkpoint()->set_every_steps(5);
  spec.set_max_restarts(max_restarts);
  return spec;
}

TEST_F(RestartTest, FailedAfterACheckpoint_RestartsFromItALeaseLater) {
  const std::string w1 = Register("host-a", 2);
  absl::StatusOr<std::string> job = Submit(RestartingSpec(2, 2));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  ReportAll(*job, RANK_STATE_READY);
  StepMetrics at5 = Step(0, 4);
  at5.set_checkpoint("/ckpt/step-5.ckpt");
  ASSERT_THAT(ReportSteps(w1, *job, {at5}), IsOk());
  ASSERT_THAT(Report(w1, *job, 1, RANK_STATE_FAILED, 7, "allreduce #9",
                     "connection reset by peer"),
              IsOk());

  const JobStatus failed = Status(*job);
  EXPECT_EQ(failed.state(), JOB_STATE_FAILED);
  ASSERT_FALSE(failed.restarted_as().empty());
  const std::string next = failed.restarted_as();
  EXPECT_THAT(failed.message(),
              HasSubstr(absl::StrCat("restarted as ", next,
                                     " from its checkpoint /ckpt/step-5.ckpt "
                                     "(1 more restarts allowed)")));
  EXPECT_THAT(failed.message(), Not(HasSubstr("gradsync resume")));

  // The restart waits out a lease before it takes the devices.
  JobStatus restart = Status(next);
  EXPECT_EQ(restart.state(), JOB_STATE_PENDING);
  EXPECT_EQ(restart.restart_of(), *job);
  EXPECT_EQ(restart.spec().checkpoint().resume_from(), "/ckpt/step-5.ckpt");
  EXPECT_EQ(restart.spec().max_restarts(), 1);
  EXPECT_THAT(restart.message(), HasSubstr("once a lease (5s) has passed"));
  Poll(w1);  // collects the cancellation of the failed job's ranks
  clock_.Advance(kLease - absl::Milliseconds(100));
  Poll(w1);  // keeps the worker's lease
  service_->CheckLeases(clock_.Now());
  EXPECT_EQ(Status(next).state(), JOB_STATE_PENDING);
  clock_.Advance(absl::Milliseconds(200));
  service_->CheckLeases(clock_.Now());
  EXPECT_EQ(Status(next).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_THAT(Poll(w1).assignments(), SizeIs(1));
}

TEST_F(RestartTest, NoRestartsLeft_OrCancelled_OrNoCheckpoint) {
  const std::string w1 = Register("host-a", 1);
  // Without a checkpoint the restart starts over; its own failure, with
  // no restarts left, ends the chain.
  absl::StatusOr<std::string> job = Submit(RestartingSpec(1, 1));
  ASSERT_THAT(job, IsOk());
  ASSERT_THAT(
      Report(w1, *job, 0, RANK_STATE_FAILED, 0, "trainer setup", "bad things"),
      IsOk());
  const std::string next = Status(*job).restarted_as();
  ASSERT_FALSE(next.empty());
  EXPECT_THAT(Status(*job).message(),
              HasSubstr("from step 0 (it wrote no checkpoint)"));
  EXPECT_TRUE(Status(next).spec().checkpoint().resume_from().empty());
  clock_.Advance(kLease - absl::Milliseconds(100));
  Poll(w1);
  clock_.Advance(absl::Milliseconds(200));
  service_->CheckLeases(clock_.Now());
  ASSERT_EQ(Status(next).state(), JOB_STATE_RENDEZVOUS);
  ASSERT_THAT(Report(w1, next, 0, RANK_STATE_FAILED, 0, "trainer setup",
                     "bad things again"),
              IsOk());
  EXPECT_EQ(Status(next).state(), JOB_STATE_FAILED);
  EXPECT_TRUE(Status(next).restarted_as().empty());
  EXPECT_THAT(Status(next).message(), Not(HasSubstr("restarted as")));

  // A cancelled job is not restarted.
  absl::StatusOr<std::string> cancelled = Submit(RestartingSpec(1, 3));
  ASSERT_THAT(cancelled, IsOk());
  CancelJobRequest cancel;
  cancel.set_job_id(*cancelled);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  EXPECT_TRUE(Status(*cancelled).restarted_as().empty());
  ListJobsResponse jobs = service_->ListJobs();
  EXPECT_THAT(jobs.jobs(), SizeIs(3));
}

TEST_F(RestartTest, MaxRestartsOutOfRange_InvalidArgument) {
  Register("host-a", 1);
  for (int bad : {-1, 101}) {
    SubmitJobRequest request;
    *request.mutable_spec() = RestartingSpec(1, bad);
    EXPECT_THAT(
        service_->SubmitJob(request),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("maxRestarts")))
        << bad;
  }
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
