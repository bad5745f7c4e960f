// CoordinatorService and parameter servers: registration and leases, shard
// placement (round-robin, least loaded first, one per server), shard
// counters and the release list, and what a lost server does to the jobs
// with shards on it.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire_version.h"
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
using ::testing::SizeIs;

using PsTest = CoordinatorTest;

std::vector<std::string> Addresses(const JobStatus& status) {
  return {status.ps_addresses().begin(), status.ps_addresses().end()};
}

TEST_F(PsTest, RegisterParameterServer_ReturnsIdAndTheWorkersLease) {
  RegisterParameterServerRequest request;
  request.set_host("ps-host");
  request.set_address("10.0.0.9:29600");
  request.set_wire_version(kWireVersion);
  absl::StatusOr<RegisterParameterServerResponse> response =
      service_->RegisterParameterServer(request);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->ps_id(), "ps-1");
  EXPECT_EQ(response->lease_ms(), 5000);
  EXPECT_EQ(response->heartbeat_ms(), 500);
  const ListWorkersResponse list = service_->ListWorkers();
  ASSERT_THAT(list.parameter_servers(), SizeIs(1));
  EXPECT_EQ(list.parameter_servers(0).ps_id(), "ps-1");
  EXPECT_EQ(list.parameter_servers(0).address(), "10.0.0.9:29600");
  EXPECT_FALSE(list.parameter_servers(0).lost());
}

TEST_F(PsTest, RegisterParameterServer_BadAddress_InvalidArgumentAddsNothing) {
  RegisterParameterServerRequest request;
  request.set_host("ps-host");
  request.set_wire_version(kWireVersion);
  for (const char* address : {"", "10.0.0.9", "10.0.0.9:0", ":80", "h:x"}) {
    request.set_address(address);
    EXPECT_THAT(service_->RegisterParameterServer(request),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("not host:port")))
        << address;
  }
  request.set_address("10.0.0.9:1");
  request.set_host("");
  EXPECT_THAT(service_->RegisterParameterServer(request),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(service_->ListWorkers().parameter_servers(), IsEmpty());
  EXPECT_EQ(RegisterPs("10.0.0.9:1"), "ps-1");  // ids not used up
}

TEST_F(PsTest, PsHeartbeat_RenewsTheLease_SilenceLosesTheServer) {
  const std::string ps = RegisterPs("10.0.0.9:1");
  clock_.Advance(absl::Seconds(4));
  ASSERT_THAT(PsBeat(ps, {}), IsOk());
  clock_.Advance(absl::Seconds(4));
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), IsEmpty());
  clock_.Advance(absl::Seconds(2));
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre(ps));
  EXPECT_TRUE(service_->ListWorkers().parameter_servers(0).lost());
  EXPECT_THAT(PsBeat(ps, {}), StatusIs(absl::StatusCode::kNotFound,
                                       HasSubstr("register again")));
  EXPECT_THAT(PsBeat("ps-7", {}), StatusIs(absl::StatusCode::kNotFound));
  // Lost once only.
  EXPECT_THAT(service_->CheckLeases(clock_.Now() + absl::Hours(1)), IsEmpty());
}

TEST_F(PsTest, PsHeartbeat_MalformedShard_InvalidArgumentRenewsNothing) {
  const std::string ps = RegisterPs("10.0.0.9:1");
  clock_.Advance(absl::Seconds(4));
  EXPECT_THAT(PsBeat(ps, {Shard("", 0)}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(PsBeat(ps, {Shard("job-1", -1)}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  clock_.Advance(absl::Seconds(2));
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre(ps));
}

TEST_F(PsTest, SubmitJob_PsModeWithoutServer_FailedPreconditionAddsNoJob) {
  Register("host-a", 2);
  EXPECT_THAT(Submit(PsJobSpec(2, 1)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no parameter server registered; start one "
                                 "with `gradsync-ps --coordinator <addr>` (or "
                                 "`gradsync local up --ps 1`)")));
  JobSpec scripted = ValidSpec(2);
  SwitchSpec* to_ps = scripted.add_switches();
  to_ps->set_step(5);
  to_ps->set_mode(SYNC_MODE_PS);
  EXPECT_THAT(Submit(scripted), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         HasSubstr("a scripted switch to PS")));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
  EXPECT_EQ(service_->ListWorkers().workers(0).free_devices(), 2);
}

TEST_F(PsTest, Placement_RoundRobinOverServers_InAssignmentsAndStatus) {
  const std::string w1 = Register("host-a", 2);
  RegisterPs("10.0.0.1:1");
  RegisterPs("10.0.0.2:1");
  RegisterPs("10.0.0.3:1");
  absl::StatusOr<std::string> job = Submit(PsJobSpec(2, 4));
  ASSERT_THAT(job, IsOk());
  const JobStatus status = Status(*job);
  EXPECT_THAT(Addresses(status), ElementsAre("10.0.0.1:1", "10.0.0.2:1",
                                             "10.0.0.3:1", "10.0.0.1:1"));
  EXPECT_EQ(status.mode(), SYNC_MODE_PS);
  const HeartbeatResponse news = Poll(w1);
  ASSERT_THAT(news.assignments(), SizeIs(1));
  EXPECT_THAT(
      news.assignments(0).ps_addresses(),
      ElementsAre("10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1", "10.0.0.1:1"));
  const ListWorkersResponse list = service_->ListWorkers();
  EXPECT_EQ(list.parameter_servers(0).shards(), 2);
  EXPECT_THAT(list.parameter_servers(0).job_ids(), ElementsAre(*job));
  EXPECT_EQ(list.parameter_servers(2).shards(), 1);
}

TEST_F(PsTest, Placement_LeastLoadedFirst_TiesByRegistrationOrder) {
  Register("host-a", 4);
  RegisterPs("10.0.0.1:1");
  RegisterPs("10.0.0.2:1");
  RegisterPs("10.0.0.3:1");
  absl::StatusOr<std::string> a = Submit(PsJobSpec(1, 2));
  absl::StatusOr<std::string> b = Submit(PsJobSpec(1, 2));
  ASSERT_THAT(b, IsOk());
  EXPECT_THAT(Addresses(Status(*a)), ElementsAre("10.0.0.1:1", "10.0.0.2:1"));
  // ps-3 holds nothing; ps-1 and ps-2 one shard each: ps-1 first.
  EXPECT_THAT(Addresses(Status(*b)), ElementsAre("10.0.0.3:1", "10.0.0.1:1"));
  // Shards of ended jobs do not count.
  CancelJobRequest cancel;
  cancel.set_job_id(*a);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  absl::StatusOr<std::string> c = Submit(PsJobSpec(1, 3));
  ASSERT_THAT(c, IsOk());
  EXPECT_THAT(Addresses(Status(*c)),
              ElementsAre("10.0.0.2:1", "10.0.0.1:1", "10.0.0.3:1"));
}

TEST_F(PsTest, Placement_ZeroShards_OnePerLiveServer) {
  const std::string w1 = Register("host-a", 2);
  RegisterPs("10.0.0.1:1");
  const std::string lost = RegisterPs("10.0.0.2:1");
  const std::string live = RegisterPs("10.0.0.3:1");
  clock_.Advance(absl::Seconds(6));
  Poll(w1);
  ASSERT_THAT(PsBeat(live, {}), IsOk());
  RegisterPs("10.0.0.4:1");
  ASSERT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre("ps-1", lost));
  absl::StatusOr<std::string> job = Submit(PsJobSpec(2, 0));
  ASSERT_THAT(job, IsOk());
  EXPECT_THAT(Addresses(Status(*job)), ElementsAre("10.0.0.3:1", "10.0.0.4:1"));
}

TEST_F(PsTest, Placement_RingJobWithoutSwitches_GetsNoShards) {
  const std::string w1 = Register("host-a", 1);
  RegisterPs("10.0.0.1:1");
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  EXPECT_THAT(Status(*job).ps_addresses(), IsEmpty());
  EXPECT_EQ(Status(*job).mode(), SYNC_MODE_RING);
  EXPECT_THAT(Poll(w1).assignments(0).ps_addresses(), IsEmpty());
}

TEST_F(PsTest, PsHeartbeat_KeepsShardStats_ReleasesJobsThatEnded) {
  const std::string w1 = Register("host-a", 2);
  const std::string ps = RegisterPs("10.0.0.1:1");
  absl::StatusOr<std::string> job = Submit(PsJobSpec(2, 2));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  ReportAll(*job, RANK_STATE_READY);
  absl::StatusOr<PsHeartbeatResponse> beat =
      PsBeat(ps, {Shard(*job, 1, 7), Shard(*job, 0, 5)});
  ASSERT_THAT(beat, IsOk());
  EXPECT_THAT(beat->release_job_ids(), IsEmpty());
  ASSERT_THAT(PsBeat(ps, {Shard(*job, 0, 9)}), IsOk());

  GetMetricsRequest metrics;
  metrics.set_job_id(*job);
  absl::StatusOr<GetMetricsResponse> response = service_->GetMetrics(metrics);
  ASSERT_THAT(response, IsOk());
  ASSERT_THAT(response->shards(), SizeIs(2));
  EXPECT_EQ(response->shards(0).shard(), 0);
  EXPECT_EQ(response->shards(0).pushes(), 9);  // the latest report
  EXPECT_EQ(response->shards(1).pushes(), 7);

  ReportAll(*job, RANK_STATE_SUCCEEDED);
  beat =
      PsBeat(ps, {Shard(*job, 0, 10), Shard(*job, 1, 8), Shard("job-99", 0)});
  ASSERT_THAT(beat, IsOk());
  EXPECT_THAT(beat->release_job_ids(), ElementsAre(*job, "job-99"));
  // The final counters stay with the ended job.
  response = service_->GetMetrics(metrics);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->shards(0).pushes(), 10);
  beat = PsBeat(ps, {});
  ASSERT_THAT(beat, IsOk());
  EXPECT_THAT(beat->release_job_ids(), IsEmpty());
}

TEST_F(PsTest, LostServer_FailsPsModeJobNamingShardsAddressAndLease) {
  const std::string w1 = Register("host-a", 2);
  const std::string ps1 = RegisterPs("10.0.0.1:7001");
  const std::string ps2 = RegisterPs("10.0.0.2:7002");
  absl::StatusOr<std::string> ps_job = Submit(PsJobSpec(1, 3));
  JobSpec scripted = ValidSpec(1);  // ring now, PS from step 100
  SwitchSpec* to_ps = scripted.add_switches();
  to_ps->set_step(100);
  to_ps->set_mode(SYNC_MODE_PS);
  absl::StatusOr<std::string> ring_job = Submit(scripted);
  ASSERT_THAT(ring_job, IsOk());
  // One shard per server; ps-1 holds two of the first job's, so ps-2 first.
  EXPECT_THAT(Addresses(Status(*ring_job)),
              ElementsAre("10.0.0.2:7002", "10.0.0.1:7001"));
  Poll(w1);
  ReportAll(*ps_job, RANK_STATE_READY);
  ReportAll(*ring_job, RANK_STATE_READY);
  ASSERT_THAT(ReportSteps(w1, *ring_job,
                          {ModeStep(0, 0, SYNC_MODE_RING),
                           ModeStep(0, 1, SYNC_MODE_RING)}),
              IsOk());

  // Workers and ps-2 keep beating; ps-1 goes silent.
  clock_.Advance(absl::Seconds(3));
  Poll(w1);
  ASSERT_THAT(PsBeat(ps2, {}), IsOk());
  clock_.Advance(absl::Seconds(3));
  Poll(w1);
  ASSERT_THAT(PsBeat(ps2, {}), IsOk());
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre(ps1));

  const JobStatus failed = Status(*ps_job);
  EXPECT_EQ(failed.state(), JOB_STATE_FAILED);
  EXPECT_THAT(failed.message(),
              HasSubstr("parameter server ps-1 at 10.0.0.1:7001 (shards 0, 2 "
                        "of 3) was lost: no heartbeat for 6.0 s (lease 5s); "
                        "restart it and resubmit the job"));
  EXPECT_THAT(Poll(w1).cancel_job_ids(), ElementsAre(*ps_job));
  // In ring mode the job does not use its shards now: it keeps running.
  EXPECT_EQ(Status(*ring_job).state(), JOB_STATE_RUNNING);
}

TEST_F(PsTest, DeregisteredServer_FailsItsPsJobsAtOnceNamingTheReason) {
  // Issue 44: a PS stopped with SIGTERM stayed LIVE until its lease ran
  // out. Now it withdraws, and its jobs fail at once.
  const std::string w1 = Register("host-a", 1);
  const std::string ps1 = RegisterPs("10.0.0.1:7001");
  absl::StatusOr<std::string> job = Submit(PsJobSpec(1, 1));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  ReportAll(*job, RANK_STATE_READY);
  DeregisterParameterServerRequest request;
  request.set_ps_id(ps1);
  request.set_reason("shutting down (Terminated)");
  request.set_credential("not-its-credential");
  EXPECT_THAT(service_->DeregisterParameterServer(request),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(Status(*job).state(), JOB_STATE_RUNNING);
  request.set_credential(Credential(ps1));
  ASSERT_THAT(service_->DeregisterParameterServer(request), IsOk());
  const JobStatus failed = Status(*job);
  EXPECT_EQ(failed.state(), JOB_STATE_FAILED);
  EXPECT_THAT(failed.message(),
              AllOf(HasSubstr("parameter server ps-1 at 10.0.0.1:7001"),
                    HasSubstr("left: shutting down (Terminated)")));
  EXPECT_TRUE(service_->ListWorkers().parameter_servers(0).lost());
  EXPECT_THAT(service_->DeregisterParameterServer(request),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(PsTest, LostServer_FailsRingJobThatSwitchedToPs) {
  const std::string w1 = Register("host-a", 1);
  const std::string ps = RegisterPs("10.0.0.1:7001");
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  Poll(w1);
  ReportAll(*job, RANK_STATE_READY);
  ASSERT_THAT(SwitchTo(*job, SYNC_MODE_PS), IsOk());
  ASSERT_THAT(ReportSteps(w1, *job,
                          {ModeStep(0, 0, SYNC_MODE_RING),
                           ModeStep(0, 1, SYNC_MODE_PS, 1)}),
              IsOk());
  clock_.Advance(absl::Seconds(6));
  Poll(w1);
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre(ps));
  EXPECT_EQ(Status(*job).state(), JOB_STATE_FAILED);
  EXPECT_THAT(Status(*job).message(),
              AllOf(HasSubstr("ps-1 at 10.0.0.1:7001 (shard 0 of 1)"),
                    HasSubstr("resubmit")));
}

TEST_F(PsTest, RegisterAtTheSameAddress_ReplacesTheOldServer) {
  Register("host-a", 1);
  const std::string old_ps = RegisterPs("10.0.0.1:7001");
  absl::StatusOr<std::string> job = Submit(PsJobSpec(1, 1));
  ASSERT_THAT(job, IsOk());
  ReportAll(*job, RANK_STATE_READY);
  const std::string new_ps = RegisterPs("10.0.0.1:7001");
  const ListWorkersResponse list = service_->ListWorkers();
  EXPECT_TRUE(list.parameter_servers(0).lost());
  EXPECT_FALSE(list.parameter_servers(1).lost());
  EXPECT_EQ(Status(*job).state(), JOB_STATE_FAILED);
  EXPECT_THAT(Status(*job).message(),
              HasSubstr(absl::StrCat("was replaced: ", new_ps)));
  EXPECT_THAT(PsBeat(old_ps, {}), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(PsTest, PendingPsJob_AllServersLost_WaitsForOneThenStarts) {
  const std::string w1 = Register("host-a", 1);
  const std::string ps = RegisterPs("10.0.0.1:1");
  absl::StatusOr<std::string> first = Submit(ValidSpec(1));
  absl::StatusOr<std::string> waiting = Submit(PsJobSpec(1, 1));
  ASSERT_THAT(waiting, IsOk());
  clock_.Advance(absl::Seconds(6));
  Poll(w1);
  ASSERT_THAT(service_->CheckLeases(clock_.Now()), ElementsAre(ps));
  ReportAll(*first, RANK_STATE_SUCCEEDED);
  Poll(w1);  // first's rank is gone from the worker
  EXPECT_EQ(Status(*waiting).state(), JOB_STATE_PENDING);
  EXPECT_THAT(Status(*waiting).message(),
              HasSubstr("waiting for a parameter server"));
  RegisterPs("10.0.0.2:1");
  EXPECT_EQ(Status(*waiting).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_THAT(Addresses(Status(*waiting)), ElementsAre("10.0.0.2:1"));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
