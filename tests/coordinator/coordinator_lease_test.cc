// CoordinatorService leases: a worker that stops heartbeating is declared
// lost after the lease, its jobs fail naming its ranks and last step, and
// the jobs' other workers are told to stop and become free.
#include <string>
#include <vector>

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

using LeaseTest = CoordinatorTest;

TEST_F(LeaseTest, CheckLeases_WithinLease_LosesNobody) {
  const std::string w1 = Register("host-a", 1);
  clock_.Advance(kLease);
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), IsEmpty());
  Poll(w1);  // renews at the fake now
  clock_.Advance(kLease);
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), IsEmpty());
  EXPECT_EQ(service_->ListWorkers().workers(0).state(), WORKER_STATE_IDLE);
}

TEST_F(LeaseTest, CheckLeases_WorkerKilledMidJob_FailsJobNamingItsRanks) {
  const std::string w1 = Register("host-a", 2);
  const std::string w2 = Register("host-b", 2);
  absl::StatusOr<std::string> job = Submit(ValidSpec(4));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  Poll(w2);
  ReportAll(*job, RANK_STATE_READY);
  ASSERT_THAT(ReportSteps(w2, *job, {Step(2, 36), Step(3, 37)}), IsOk());

  // w-1 keeps heartbeating; w-2 goes silent.
  clock_.Advance(absl::Seconds(3));
  Poll(w1);
  clock_.Advance(absl::Seconds(3));
  Poll(w1);
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre(w2));

  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_FAILED);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("worker w-2 on host host-b (ranks 2, 3) lost: "
                              "no heartbeat for 6.0 s; last step reported 37"),
                    HasSubstr("check that worker's log")));
  const HeartbeatResponse news = Poll(w1);
  EXPECT_THAT(news.cancel_job_ids(), ElementsAre(*job));
  EXPECT_THAT(news.cancel_reason(), HasSubstr("w-2"));

  const ListWorkersResponse workers = service_->ListWorkers();
  EXPECT_EQ(workers.workers(0).state(), WORKER_STATE_IDLE);
  EXPECT_EQ(workers.workers(0).free_devices(), 2);
  EXPECT_EQ(workers.workers(1).state(), WORKER_STATE_LOST);
  // Lost once only.
  EXPECT_THAT(service_->CheckLeases(clock_.Now() + absl::Hours(1)),
              ElementsAre(w1));
}

TEST_F(LeaseTest, DeregisterWorker_MidJob_FailsJobAtOnceAndWithdrawsDevices) {
  const std::string w1 = Register("host-a", 2);
  const std::string w2 = Register("host-b", 2);
  absl::StatusOr<std::string> job = Submit(ValidSpec(4));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  Poll(w2);
  ReportAll(*job, RANK_STATE_READY);
  DeregisterWorkerRequest request;
  request.set_worker_id(w2);
  request.set_credential(Credential(w2));
  request.set_reason("shutting down (Terminated)");
  ASSERT_THAT(service_->DeregisterWorker(request), IsOk());
  const JobStatus status = Status(*job);
  EXPECT_EQ(status.state(), JOB_STATE_FAILED);
  EXPECT_THAT(status.message(),
              HasSubstr("worker w-2 on host host-b (ranks 2, 3) left: "
                        "shutting down (Terminated)"));
  EXPECT_THAT(Poll(w1).cancel_job_ids(), ElementsAre(*job));
  // Its devices are gone: a 4-rank job no longer fits.
  EXPECT_THAT(Submit(ValidSpec(4)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted));
  // Twice, or an unknown worker: NOT_FOUND.
  EXPECT_THAT(service_->DeregisterWorker(request),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(LeaseTest, CheckLeases_LostBeforeAnyStep_SaysSo) {
  Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  clock_.Advance(kLease + absl::Seconds(1));
  service_->CheckLeases(clock_.Now());
  EXPECT_THAT(Status(*job).message(), AllOf(HasSubstr("(rank 0) lost"),
                                            HasSubstr("no step reported yet")));
}

TEST_F(LeaseTest, Heartbeat_FromLostWorker_ReturnsNotFoundAskingToRegister) {
  const std::string w1 = Register("host-a", 1);
  clock_.Advance(kLease + absl::Seconds(1));
  service_->CheckLeases(clock_.Now());
  HeartbeatRequest request;
  request.set_worker_id(w1);
  request.set_credential(Credential(w1));
  EXPECT_THAT(
      service_->Heartbeat(request),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("declared lost"), HasSubstr("Register again"))));
  // Registering again gives a new id and the devices back.
  const std::string again = Register("host-a", 1);
  EXPECT_EQ(again, "w-2");
  EXPECT_THAT(Submit(ValidSpec(1)), IsOk());
}

TEST_F(LeaseTest, CheckLeases_LostWorkersDevices_KeepPendingJobWaiting) {
  Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  absl::StatusOr<std::string> b = Submit(ValidSpec(2));
  ASSERT_THAT(b, IsOk());
  clock_.Advance(kLease + absl::Seconds(1));
  Poll(w2);
  service_->CheckLeases(clock_.Now());
  EXPECT_EQ(Status(*a).state(), JOB_STATE_FAILED);
  const JobStatus pending = Status(*b);
  EXPECT_EQ(pending.state(), JOB_STATE_PENDING);
  EXPECT_THAT(pending.message(), HasSubstr("workers were lost"));
}

TEST_F(LeaseTest, StartLeaseChecks_SilentWorker_FailsJobInTheBackground) {
  Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  service_->StartLeaseChecks();
  clock_.Advance(kLease + absl::Seconds(1));
  JobWatchCursor cursor;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  JobState state = JOB_STATE_UNSPECIFIED;
  while (!cursor.done && absl::Now() < deadline) {
    auto event = service_->WaitForJobEvent(*job, &cursor, deadline);
    ASSERT_THAT(event, IsOk());
    if (event->has_value()) state = (*event)->status().state();
  }
  EXPECT_EQ(state, JOB_STATE_FAILED);
  service_->Shutdown();
}

TEST_F(LeaseTest, Shutdown_WakesBlockedCallsWithUnavailable) {
  const std::string w1 = Register("host-a", 1);
  service_->Shutdown();
  HeartbeatRequest request;
  request.set_worker_id(w1);
  request.set_credential(Credential(w1));
  request.set_wait_ms(1000);
  EXPECT_THAT(service_->Heartbeat(request),
              StatusIs(absl::StatusCode::kUnavailable));
}

// Every daemon gets its own credential at registration, and every later
// call in its name must carry it: ids are public (ListWorkers prints them).
TEST_F(LeaseTest, DaemonCalls_WithoutTheirCredential_PermissionDenied) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  const std::string ps = RegisterPs("10.0.0.9:29600");
  EXPECT_EQ(Credential(w1).size(), 32u);
  EXPECT_NE(Credential(w1), Credential(w2));
  EXPECT_NE(Credential(w1), Credential(ps));

  HeartbeatRequest beat;
  beat.set_worker_id(w1);
  beat.set_credential(Credential(w2));  // another worker's
  EXPECT_THAT(
      service_->Heartbeat(beat),
      StatusIs(absl::StatusCode::kPermissionDenied,
               AllOf(HasSubstr("worker " + w1), HasSubstr("not its own"))));
  DeregisterWorkerRequest leave;
  leave.set_worker_id(w1);
  EXPECT_THAT(service_->DeregisterWorker(leave),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("carries no credential")));
  PsHeartbeatRequest ps_beat;
  ps_beat.set_ps_id(ps);
  EXPECT_THAT(service_->PsHeartbeat(ps_beat),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("parameter server " + ps)));
  // Nothing changed: both workers are live and heartbeat with their own.
  Poll(w1);
  Poll(w2);
  EXPECT_THAT(PsBeat(ps, {}), IsOk());
  leave.set_credential(Credential(w1));
  EXPECT_THAT(service_->DeregisterWorker(leave), IsOk());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
