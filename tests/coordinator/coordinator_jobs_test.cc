// CoordinatorService with plain calls: job submission and scheduling, every
// job transition, rank reports, metrics and cancellation, and that bad
// input changes nothing.
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

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

using JobsTest = CoordinatorTest;

std::vector<int> Ranks(const Assignment& assignment) {
  return {assignment.ranks().begin(), assignment.ranks().end()};
}

TEST_F(JobsTest, SubmitJob_EnoughDevices_PlacesRanksAndQueuesAssignments) {
  const std::string w1 = Register("host-a", 2);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(3));
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(*job, "job-1");

  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_RENDEZVOUS);
  ASSERT_THAT(status.ranks(), SizeIs(3));
  EXPECT_EQ(status.ranks(0).worker_id(), w1);
  EXPECT_EQ(status.ranks(1).worker_id(), w1);
  EXPECT_EQ(status.ranks(2).worker_id(), w2);
  EXPECT_EQ(status.spec().bucket_bytes(), 25 << 20);  // defaults filled

  const HeartbeatResponse news1 = Poll(w1);
  ASSERT_THAT(news1.assignments(), SizeIs(1));
  const Assignment& a1 = news1.assignments(0);
  EXPECT_EQ(a1.job_id(), *job);
  EXPECT_EQ(a1.generation(), 1);
  EXPECT_EQ(a1.world_size(), 3);
  EXPECT_THAT(Ranks(a1), ElementsAre(0, 1));
  ASSERT_THAT(a1.devices(), SizeIs(2));
  EXPECT_EQ(a1.devices(1).index(), 1);
  EXPECT_EQ(a1.spec().device(), "cpu");
  EXPECT_EQ(a1.ranks_on_host(), 2);
  const HeartbeatResponse news2 = Poll(w2);
  EXPECT_THAT(Ranks(news2.assignments(0)), ElementsAre(2));
  EXPECT_EQ(news2.assignments(0).ranks_on_host(), 1);
  // Delivered once.
  EXPECT_THAT(Poll(w1).assignments(), IsEmpty());
}

// Workers of one host share its cores: each learns the host's rank count.
TEST_F(JobsTest, SubmitJob_RanksOnHostCountsEveryWorkerThere) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-a", 1);
  const std::string w3 = Register("host-b", 1);
  ASSERT_THAT(Submit(ValidSpec(3)), IsOk());
  EXPECT_EQ(Poll(w1).assignments(0).ranks_on_host(), 2);
  EXPECT_EQ(Poll(w2).assignments(0).ranks_on_host(), 2);
  EXPECT_EQ(Poll(w3).assignments(0).ranks_on_host(), 1);
}

TEST_F(JobsTest, SubmitJob_MoreWorkersThanDevices_ReturnsResourceExhausted) {
  Register("host-a", 2);
  EXPECT_THAT(Submit(ValidSpec(3)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("3 ranks"), HasSubstr("only 2"),
                             HasSubstr("start more workers"))));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
  EXPECT_EQ(service_->ListWorkers().workers(0).free_devices(), 2);
}

TEST_F(JobsTest, SubmitJob_CudaJobOnCpuWorkers_ReturnsResourceExhausted) {
  Register("host-a", 4, "cpu");
  EXPECT_THAT(
      Submit(ValidSpec(1, "cuda")),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("cuda")));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
}

TEST_F(JobsTest, SubmitJob_MalformedSpec_ReturnsInvalidArgumentAndAddsNoJob) {
  Register("host-a", 2);
  JobSpec spec = ValidSpec(1);
  spec.mutable_model()->set_kind("transformer");
  EXPECT_THAT(Submit(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("model.kind")));
  spec = ValidSpec(1);
  spec.mutable_dataset()->set_name("cifar");
  EXPECT_THAT(Submit(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("dataset.name")));
  spec = ValidSpec(1);
  spec.set_ring_algorithm("butterfly");
  EXPECT_THAT(Submit(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("ringAlgorithm")));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
  EXPECT_EQ(service_->ListWorkers().workers(0).free_devices(), 2);
  // The next valid job still gets the first id.
  EXPECT_THAT(Submit(ValidSpec(1)), IsOk());
  EXPECT_EQ(service_->ListJobs().jobs(0).job_id(), "job-1");
}

// With --checkpoint-root, a spec naming checkpoints elsewhere is refused
// at submit and adds no job; one under a root goes.
class CheckpointRootsTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    checkpoint_roots_ = {"/data/ckpt"};
    CoordinatorTest::SetUp();
  }
};

TEST_F(CheckpointRootsTest, SubmitJob_OutsideTheRoots_InvalidArgumentNoJob) {
  Register("host-a", 2);
  JobSpec spec = ValidSpec(1);
  spec.mutable_checkpoint()->set_resume_from("/etc");
  EXPECT_THAT(Submit(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("checkpoint.resumeFrom '/etc'"),
                             HasSubstr("/data/ckpt"))));
  spec = ValidSpec(1);
  spec.mutable_checkpoint()->set_directory("/data/ckpt/../../etc");
  EXPECT_THAT(Submit(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("checkpoint.directory")));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
  spec = ValidSpec(1);
  spec.mutable_checkpoint()->set_directory("/data/ckpt/run-1");
  spec.mutable_checkpoint()->set_resume_from("/data/ckpt/run-0/step-5.ckpt");
  EXPECT_THAT(Submit(spec), IsOk());
  EXPECT_EQ(service_->ListJobs().jobs(0).job_id(), "job-1");
}

JobSpec EntrypointSpec(int workers) {
  JobSpec spec;
  spec.set_num_workers(workers);
  spec.mutable_model()->set_kind("entrypoint");
  spec.mutable_model()->mutable_entrypoint()->add_argv("python3");
  spec.mutable_model()->mutable_entrypoint()->set_workdir("/srv/run");
  return spec;
}

// An entrypoint runs the submitter's code on every worker: a coordinator
// that does not authenticate its users refuses it, and adds no job.
TEST_F(JobsTest, SubmitJob_EntrypointWithoutUserToken_PermissionDeniedNoJob) {
  Register("host-a", 2);
  EXPECT_THAT(Submit(EntrypointSpec(2)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("--user-token-file")));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
}

class UserTokenTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    user_token_ = "users-token";
    CoordinatorTest::SetUp();
  }
};

TEST_F(UserTokenTest, SubmitJob_Entrypoint_PlacedLikeAnyJob) {
  const std::string w1 = Register("host-a", 2);
  ASSERT_THAT(Submit(EntrypointSpec(2)), IsOk());
  EXPECT_EQ(service_->ListJobs().jobs(0).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(JobsTest, SubmitJob_DevicesBusy_WaitsPendingThenRunsInFifoOrder) {
  const std::string w1 = Register("host-a", 2);
  absl::StatusOr<std::string> a = Submit(ValidSpec(2));
  absl::StatusOr<std::string> b = Submit(ValidSpec(2));
  absl::StatusOr<std::string> c = Submit(ValidSpec(1));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(Status(*a).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_EQ(Status(*b).state(), JOB_STATE_PENDING);
  EXPECT_THAT(Status(*b).message(), HasSubstr("waiting for 2 free cpu"));
  EXPECT_EQ(Status(*c).state(), JOB_STATE_PENDING);

  ReportAll(*a, RANK_STATE_SUCCEEDED);
  EXPECT_EQ(Status(*a).state(), JOB_STATE_SUCCEEDED);
  // b was first in line; c, though it would fit in one device, waits.
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_EQ(Status(*c).state(), JOB_STATE_PENDING);

  ReportAll(*b, RANK_STATE_SUCCEEDED);
  EXPECT_EQ(Status(*c).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(JobsTest, RegisterWorker_NewDevices_StartPendingJob) {
  Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  absl::StatusOr<std::string> b = Submit(ValidSpec(1));
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(Status(*b).state(), JOB_STATE_PENDING);
  const std::string w2 = Register("host-b", 1);
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_THAT(Poll(w2).assignments(), SizeIs(1));
}

TEST_F(JobsTest, ReportRank_AllReady_MovesRendezvousToRunning) {
  const std::string w1 = Register("host-a", 2);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  ASSERT_THAT(Report(w1, *job, 0, RANK_STATE_READY), IsOk());
  EXPECT_EQ(Status(*job).state(), JOB_STATE_RENDEZVOUS);
  ASSERT_THAT(Report(w1, *job, 1, RANK_STATE_READY), IsOk());
  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_RUNNING);
  EXPECT_GT(status.start_time(), 0);
  // READY again is harmless.
  EXPECT_THAT(Report(w1, *job, 1, RANK_STATE_READY), IsOk());
}

TEST_F(JobsTest, ReportRank_AllSucceeded_SucceedsAndFreesWorkers) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  ReportAll(*job, RANK_STATE_READY);
  ReportRankRequest done;
  done.set_worker_id(w1);
  done.set_credential(Credential(w1));
  done.set_job_id(*job);
  done.set_rank(0);
  done.set_state(RANK_STATE_SUCCEEDED);
  done.set_step(10);
  done.set_test_accuracy(0.85);
  done.set_test_loss(0.4);
  ASSERT_THAT(service_->ReportRank(done), IsOk());
  EXPECT_EQ(Status(*job).state(), JOB_STATE_RUNNING);
  ASSERT_THAT(Report(w2, *job, 1, RANK_STATE_SUCCEEDED, 10), IsOk());

  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_SUCCEEDED);
  EXPECT_DOUBLE_EQ(status.test_accuracy(), 0.85);
  EXPECT_DOUBLE_EQ(status.test_loss(), 0.4);
  EXPECT_EQ(status.step(), 10);
  EXPECT_GT(status.end_time(), 0);
  const ListWorkersResponse workers = service_->ListWorkers();
  for (const WorkerInfo& worker : workers.workers()) {
    EXPECT_EQ(worker.state(), WORKER_STATE_IDLE) << worker.worker_id();
    EXPECT_EQ(worker.free_devices(), 1);
  }
  // A success needs no cancellation.
  EXPECT_THAT(Poll(w2).cancel_job_ids(), IsEmpty());
}

TEST_F(JobsTest, ReportRank_Failed_FailsJobNamingRankStepAndOperation) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  Poll(w2);
  ReportAll(*job, RANK_STATE_READY);
  ASSERT_THAT(Report(w2, *job, 1, RANK_STATE_FAILED, 37, "allreduce #17",
                     "connection reset by peer"),
              IsOk());

  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_FAILED);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("rank 1 failed at step 37 during allreduce #17: "
                              "connection reset by peer"),
                    HasSubstr("worker w-2 on host host-b")));
  // Both workers are told to stop the job's ranks; both are free.
  for (const std::string& w : {w1, w2}) {
    const HeartbeatResponse news = Poll(w);
    EXPECT_THAT(news.cancel_job_ids(), ElementsAre(*job)) << w;
    EXPECT_THAT(news.cancel_reason(), HasSubstr("rank 1 failed")) << w;
  }
  EXPECT_EQ(service_->ListWorkers().workers(0).state(), WORKER_STATE_IDLE);
  EXPECT_EQ(service_->ListWorkers().workers(1).state(), WORKER_STATE_IDLE);
}

TEST_F(JobsTest, ReportRank_FailedAfterACheckpoint_SaysHowToResume) {
  const std::string w1 = Register("host-a", 2);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  ReportAll(*job, RANK_STATE_READY);
  // Rank 0 names the files it wrote; a late report of an older one (and
  // any rank's other steps) leaves the newest.
  StepMetrics at10 = Step(0, 9);
  at10.set_checkpoint("/ckpt/step-10.ckpt");
  StepMetrics at20 = Step(0, 19);
  at20.set_checkpoint("/ckpt/step-20.ckpt");
  StepMetrics rank1 = Step(1, 24);
  rank1.set_checkpoint("/elsewhere/step-25.ckpt");
  ASSERT_THAT(ReportSteps(w1, *job, {at20, Step(0, 20)}), IsOk());
  ASSERT_THAT(ReportSteps(w1, *job, {at10, rank1}), IsOk());
  EXPECT_EQ(Status(*job).last_checkpoint(), "/ckpt/step-20.ckpt");
  EXPECT_EQ(Status(*job).last_checkpoint_steps(), 20);
  // The lowest step rank 0 reported: where the job started.
  EXPECT_EQ(Status(*job).first_step(), 9);

  ASSERT_THAT(Report(w1, *job, 1, RANK_STATE_FAILED, 24, "allreduce #60",
                     "connection reset by peer"),
              IsOk());
  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_FAILED);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("rank 1 failed at step 24"),
                    HasSubstr(absl::StrCat(
                        "its last checkpoint is /ckpt/step-20.ckpt (20 steps "
                        "done): go on from there with `gradsync resume ",
                        *job,
                        "` (or submit with --resume-from "
                        "/ckpt/step-20.ckpt)"))));

  // A cancelled job says so too; one without a checkpoint says nothing.
  Poll(w1);  // the failed job's ranks are gone from the worker
  absl::StatusOr<std::string> second = Submit(ValidSpec(1));
  absl::StatusOr<std::string> third = Submit(ValidSpec(1));
  ASSERT_THAT(third, IsOk());
  ASSERT_THAT(ReportSteps(w1, *second, {at10}), IsOk());
  for (const std::string& id : {*second, *third}) {
    CancelJobRequest cancel;
    cancel.set_job_id(id);
    ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  }
  EXPECT_THAT(Status(*second).message(),
              HasSubstr("--resume-from /ckpt/step-10.ckpt"));
  EXPECT_THAT(Status(*third).message(), Not(HasSubstr("checkpoint")));
}

TEST_F(JobsTest, ReportRank_RankOfAnotherWorker_ReturnsPermissionDenied) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  const JobStatus before = Status(*job);
  EXPECT_THAT(Report(w1, *job, 1, RANK_STATE_FAILED),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("runs on worker w-2, not on w-1")));
  EXPECT_THAT(Report(w1, *job, 5, RANK_STATE_READY),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("rank 5 is not in job")));
  EXPECT_EQ(Status(*job).SerializeAsString(), before.SerializeAsString());
}

TEST_F(JobsTest, ReportRank_BadInput_ReturnsErrorAndChangesNothing) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  const JobStatus before = Status(*job);
  EXPECT_THAT(Report(w1, *job, 0, RANK_STATE_UNSPECIFIED),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Report(w1, *job, 0, RANK_STATE_READY, -1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Report(w1, "job-99", 0, RANK_STATE_READY),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'job-99'")));
  EXPECT_EQ(Status(*job).SerializeAsString(), before.SerializeAsString());
}

TEST_F(JobsTest, ReportRank_AfterJobEnded_ReturnsFailedPrecondition) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  ReportAll(*job, RANK_STATE_SUCCEEDED);
  EXPECT_THAT(Report(w1, *job, 0, RANK_STATE_FAILED),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("already ended (SUCCEEDED")));
  EXPECT_EQ(Status(*job).state(), JOB_STATE_SUCCEEDED);
}

TEST_F(JobsTest, CancelJob_Running_CancelsAndTellsEveryWorker) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  Poll(w2);
  ReportAll(*job, RANK_STATE_READY);
  CancelJobRequest cancel;
  cancel.set_job_id(*job);
  absl::StatusOr<JobStatus> status = service_->CancelJob(cancel);
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(status->state(), JOB_STATE_CANCELLED);
  EXPECT_EQ(Status(*job).state(), JOB_STATE_CANCELLED);
  for (const std::string& w : {w1, w2}) {
    const HeartbeatResponse news = Poll(w);
    EXPECT_THAT(news.cancel_job_ids(), ElementsAre(*job));
    EXPECT_THAT(news.cancel_reason(), HasSubstr("cancelled"));
  }
  EXPECT_EQ(service_->ListWorkers().workers(0).free_devices(), 1);
  // Cancelling again is refused and changes nothing.
  EXPECT_THAT(service_->CancelJob(cancel),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("already ended (CANCELLED")));
}

TEST_F(JobsTest, CancelJob_Pending_CancelsWithoutTellingWorkers) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  absl::StatusOr<std::string> b = Submit(ValidSpec(1));
  ASSERT_THAT(b, IsOk());
  Poll(w1);
  CancelJobRequest cancel;
  cancel.set_job_id(*b);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  EXPECT_EQ(Status(*b).state(), JOB_STATE_CANCELLED);
  EXPECT_THAT(Poll(w1).cancel_job_ids(), IsEmpty());
  // It does not start when devices free up.
  ReportAll(*a, RANK_STATE_SUCCEEDED);
  EXPECT_EQ(Status(*b).state(), JOB_STATE_CANCELLED);
  EXPECT_THAT(Poll(w1).assignments(), IsEmpty());
}

TEST_F(JobsTest, CancelJob_BeforeAssignmentCollected_WithdrawsAssignment) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  CancelJobRequest cancel;
  cancel.set_job_id(*job);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  const HeartbeatResponse news = Poll(w1);
  EXPECT_THAT(news.assignments(), IsEmpty());
  EXPECT_THAT(news.cancel_job_ids(), IsEmpty());
}

TEST_F(JobsTest, CancelJob_UnknownJob_ReturnsNotFound) {
  CancelJobRequest cancel;
  cancel.set_job_id("job-7");
  EXPECT_THAT(
      service_->CancelJob(cancel),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("gradsync status")));
}

TEST_F(JobsTest, ReportMetrics_KeepsEveryStepAndMinStepOverRanks) {
  const std::string w1 = Register("host-a", 2);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  ASSERT_THAT(ReportSteps(w1, *job, {Step(0, 0), Step(1, 0), Step(0, 1)}),
              IsOk());
  EXPECT_EQ(Status(*job).step(), 0);
  ASSERT_THAT(ReportSteps(w1, *job, {Step(1, 1), Step(0, 2)}), IsOk());
  EXPECT_EQ(Status(*job).step(), 1);

  GetMetricsRequest request;
  request.set_job_id(*job);
  absl::StatusOr<GetMetricsResponse> metrics = service_->GetMetrics(request);
  ASSERT_THAT(metrics, IsOk());
  ASSERT_THAT(metrics->metrics(), SizeIs(5));
  EXPECT_EQ(metrics->metrics(4).rank(), 0);
  EXPECT_EQ(metrics->metrics(4).step(), 2);
}

TEST_F(JobsTest,
       ReportMetrics_RankNotInJob_ReturnsPermissionDeniedAndKeepsNone) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  const std::string w3 = Register("host-c", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  // One good step and one of a rank that is not there: all rejected.
  EXPECT_THAT(ReportSteps(w1, *job, {Step(0, 0), Step(2, 0)}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("rank 2 is not in job")));
  EXPECT_THAT(ReportSteps(w1, *job, {Step(1, 0)}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("runs on worker w-2")));
  EXPECT_THAT(ReportSteps(w3, *job, {Step(0, 0)}),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ReportSteps(w1, *job, {Step(0, -3)}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ReportSteps(w1, "job-42", {Step(0, 0)}),
              StatusIs(absl::StatusCode::kNotFound));
  GetMetricsRequest request;
  request.set_job_id(*job);
  EXPECT_THAT(service_->GetMetrics(request)->metrics(), IsEmpty());
}

TEST_F(JobsTest, ReportMetrics_AfterJobEnded_ReturnsFailedPrecondition) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  CancelJobRequest cancel;
  cancel.set_job_id(*job);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  EXPECT_THAT(
      ReportSteps(w1, *job, {Step(0, 0)}),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("CANCELLED")));
}

TEST_F(JobsTest, GetJob_UnknownJob_ReturnsNotFound) {
  GetJobRequest request;
  request.set_job_id("job-1");
  EXPECT_THAT(service_->GetJob(request), StatusIs(absl::StatusCode::kNotFound));
  GetMetricsRequest metrics;
  metrics.set_job_id("nope");
  EXPECT_THAT(service_->GetMetrics(metrics),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
