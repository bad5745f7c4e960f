// A coordinator that survives its own restart (CoordinatorConfig::
// state_store): a new CoordinatorService on the state the old one saved
// keeps its running jobs running, lets the daemons re-attach with their
// ids and credentials, never reuses an id, keeps the PS shards of live
// jobs, the metrics, mode history, switch requests and rendezvous keys, and
// fails a job caught at rendezvous (restarting it if its spec allows).
// Each test runs on the memory store and on the SQLite database (closed
// and reopened at each restart).
#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/sqlite_state_store.h"
#include "server/coordinator/state_store.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class PersistenceTest : public CoordinatorTest,
                        public ::testing::WithParamInterface<bool> {
 protected:
  bool sqlite() const { return GetParam(); }

  void SetUp() override {
    if (sqlite()) {
      std::string pattern = ::testing::TempDir() + "/persistence_XXXXXX";
      ASSERT_NE(mkdtemp(pattern.data()), nullptr);
      dir_ = pattern;
      OpenDatabase();
    } else {
      state_store_ = NewMemoryStateStore();
    }
    CoordinatorTest::SetUp();
  }

  void TearDown() override {
    service_.reset();
    state_store_.reset();
    if (!dir_.empty()) {
      (void)!system(absl::StrCat("rm -rf '", dir_, "'").c_str());
    }
  }

  void OpenDatabase() {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        OpenSqliteStateStore(dir_ + "/state.db");
    ASSERT_THAT(store, IsOk());
    state_store_ = *std::move(store);
  }

  // The coordinator goes away and a new one starts on what it saved.
  void Restart() {
    service_.reset();
    if (sqlite()) {
      state_store_.reset();  // the database is closed...
      OpenDatabase();        // ...and opened again
    }
    Start();
  }

  // Submits a `ranks`-rank ring job on `worker` and brings it to RUNNING.
  std::string RunningJob(const std::string& worker, int ranks) {
    absl::StatusOr<std::string> job = Submit(ValidSpec(ranks));
    EXPECT_THAT(job, IsOk());
    if (!job.ok()) return "";
    EXPECT_THAT(Poll(worker).assignments(), SizeIs(1));
    ReportAll(*job, RANK_STATE_READY);
    EXPECT_EQ(Status(*job).state(), JOB_STATE_RUNNING);
    return *job;
  }

  GetMetricsResponse Metrics(const std::string& job_id) {
    GetMetricsRequest request;
    request.set_job_id(job_id);
    absl::StatusOr<GetMetricsResponse> response = service_->GetMetrics(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? *response : GetMetricsResponse();
  }

  std::string dir_;
};

TEST_P(PersistenceTest, ARunningJobRunsOnAndFinishesAfterARestart) {
  const std::string w1 = Register("host-a", 2);
  const std::string job = RunningJob(w1, 2);
  ASSERT_THAT(
      ReportSteps(w1, job, {Step(0, 0), Step(1, 0), Step(0, 1), Step(1, 1)}),
      IsOk());
  const JobStatus before = Status(job);

  Restart();

  const JobStatus after = Status(job);
  EXPECT_EQ(after.state(), JOB_STATE_RUNNING);
  EXPECT_EQ(after.step(), before.step());
  EXPECT_EQ(after.submit_time(), before.submit_time());
  EXPECT_EQ(after.start_time(), before.start_time());
  ASSERT_THAT(after.ranks(), SizeIs(2));
  EXPECT_EQ(after.ranks(1).worker_id(), w1);
  EXPECT_THAT(Metrics(job).metrics(), SizeIs(4));

  // The worker heartbeats with its old id and credential: no new
  // registration, no cancellation.
  const HeartbeatResponse news = Poll(w1);
  EXPECT_THAT(news.cancel_job_ids(), IsEmpty());
  EXPECT_THAT(news.assignments(), IsEmpty());
  ASSERT_THAT(ReportSteps(w1, job, {Step(0, 2), Step(1, 2)}), IsOk());
  ReportAll(job, RANK_STATE_SUCCEEDED);
  EXPECT_EQ(Status(job).state(), JOB_STATE_SUCCEEDED);
  EXPECT_EQ(Status(job).step(), 2);
  EXPECT_THAT(Metrics(job).metrics(), SizeIs(6));
}

TEST_P(PersistenceTest, DaemonsHaveTheLeaseAndAGraceToReattach) {
  const std::string w1 = Register("host-a", 1);
  const std::string job = RunningJob(w1, 1);
  Restart();
  // The grace extends the lease, not the heartbeat: it reads as the
  // restart, never as a time to come (heartbeat_age_seconds was negative,
  // and `gradsync workers` said "- ago").
  EXPECT_LE(service_->ListWorkers().workers(0).last_heartbeat(),
            absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch()));

  clock_.Advance(kLease + CoordinatorService::kRestartGrace - absl::Seconds(1));
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), IsEmpty());
  EXPECT_EQ(Status(job).state(), JOB_STATE_RUNNING);
  Poll(w1);  // re-attached in time
  clock_.Advance(kLease + absl::Seconds(1));
  EXPECT_THAT(service_->CheckLeases(clock_.Now()), ::testing::ElementsAre(w1));
  EXPECT_EQ(Status(job).state(), JOB_STATE_FAILED);
}

TEST_P(PersistenceTest, IdsAreNeverReused) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  ASSERT_THAT(Submit(ValidSpec(1)), IsOk());
  const std::string ps1 = RegisterPs("10.0.0.9:7000");
  clock_.Advance(kLease * 2);
  service_->CheckLeases(clock_.Now());  // w1, w2 and ps-1 are lost

  Restart();

  EXPECT_EQ(Register("host-c", 1), "w-3");
  EXPECT_EQ(RegisterPs("10.0.0.9:7001"), "ps-2");
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(*job, "job-2");
  // The lost stay lost: they must register again.
  HeartbeatRequest beat;
  beat.set_worker_id(w1);
  beat.set_credential(Credential(w1));
  EXPECT_THAT(service_->Heartbeat(beat), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(PersistenceTest, CredentialsStillGuardEveryDaemon) {
  const std::string w1 = Register("host-a", 1);
  const std::string ps1 = RegisterPs("10.0.0.9:7000");
  Restart();
  HeartbeatRequest beat;
  beat.set_worker_id(w1);
  beat.set_credential("not its credential, but 32 bytes long...");
  EXPECT_THAT(service_->Heartbeat(beat),
              StatusIs(absl::StatusCode::kPermissionDenied));
  PsHeartbeatRequest ps_beat;
  ps_beat.set_ps_id(ps1);
  EXPECT_THAT(service_->PsHeartbeat(ps_beat),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(PsBeat(ps1, {}), IsOk());
}

TEST_P(PersistenceTest, KeepsTheShardsOfLiveJobsAndReleasesEndedOnes) {
  const std::string ps1 = RegisterPs("10.0.0.9:7000");
  const std::string w1 = Register("host-a", 2);
  absl::StatusOr<std::string> live = Submit(PsJobSpec(1, 1));
  ASSERT_THAT(live, IsOk());
  absl::StatusOr<std::string> ended = Submit(PsJobSpec(1, 1));
  ASSERT_THAT(ended, IsOk());
  Poll(w1);
  ReportAll(*live, RANK_STATE_READY);
  CancelJobRequest cancel;
  cancel.set_job_id(*ended);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());

  Restart();

  absl::StatusOr<PsHeartbeatResponse> beat =
      PsBeat(ps1, {Shard(*live, 0, 5), Shard(*ended, 0, 1)});
  ASSERT_THAT(beat, IsOk());
  EXPECT_THAT(beat->release_job_ids(), ::testing::ElementsAre(*ended));
  EXPECT_EQ(Status(*live).state(), JOB_STATE_RUNNING);
  EXPECT_THAT(Status(*live).ps_addresses(),
              ::testing::ElementsAre("10.0.0.9:7000"));
}

TEST_P(PersistenceTest, AJobAtRendezvousFailsAndRestartsWhenItMay) {
  const std::string w1 = Register("host-a", 2);
  JobSpec spec = ValidSpec(2);
  spec.set_max_restarts(1);
  absl::StatusOr<std::string> job = Submit(spec);
  ASSERT_THAT(job, IsOk());
  Poll(w1);  // assigned; no rank has reported READY
  ASSERT_EQ(Status(*job).state(), JOB_STATE_RENDEZVOUS);

  Restart();

  const JobStatus failed = Status(*job);
  EXPECT_EQ(failed.state(), JOB_STATE_FAILED);
  EXPECT_THAT(failed.message(), HasSubstr("restarted while the job was at "
                                          "rendezvous"));
  ASSERT_FALSE(failed.restarted_as().empty());
  EXPECT_EQ(Status(failed.restarted_as()).state(), JOB_STATE_PENDING);
  // Its worker hears of the failure.
  EXPECT_THAT(Poll(w1).cancel_job_ids(), ::testing::Contains(*job));
}

TEST_P(PersistenceTest, APendingJobStaysQueuedInOrder) {
  const std::string w1 = Register("host-a", 1);
  const std::string first = RunningJob(w1, 1);
  absl::StatusOr<std::string> second = Submit(ValidSpec(1));
  ASSERT_THAT(second, IsOk());
  absl::StatusOr<std::string> third = Submit(ValidSpec(1));
  ASSERT_THAT(third, IsOk());

  Restart();

  EXPECT_EQ(Status(*second).state(), JOB_STATE_PENDING);
  ReportAll(first, RANK_STATE_SUCCEEDED);
  // The worker's next heartbeat says first's rank is gone: second starts.
  const HeartbeatResponse news = Poll(w1);
  EXPECT_EQ(Status(*second).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_EQ(Status(*third).state(), JOB_STATE_PENDING);
  ASSERT_THAT(news.assignments(), SizeIs(1));
  EXPECT_EQ(news.assignments(0).job_id(), *second);
}

TEST_P(PersistenceTest, RendezvousKeysSurviveUntilTheirJobEnds) {
  const std::string w1 = Register("host-a", 1);
  const std::string job = RunningJob(w1, 1);
  StoreSetRequest set;
  *set.mutable_scope() = Scope(w1, job);
  set.set_key("tcp/addr/0");
  set.set_value(std::string("10.0.0.1:4000\0", 14));
  ASSERT_THAT(service_->StoreSet(set), IsOk());
  StoreAddRequest add;
  *add.mutable_scope() = Scope(w1, job);
  add.set_key("count");
  add.set_delta(5);
  ASSERT_THAT(service_->StoreAdd(add), IsOk());

  Restart();

  StoreGetRequest get;
  *get.mutable_scope() = Scope(w1, job);
  get.set_key("tcp/addr/0");
  absl::StatusOr<StoreGetResponse> value = service_->StoreGet(get);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(value->value(), std::string("10.0.0.1:4000\0", 14));
  add.set_delta(2);
  absl::StatusOr<StoreAddResponse> sum = service_->StoreAdd(add);
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->value(), 7);

  ReportAll(job, RANK_STATE_SUCCEEDED);
  Restart();
  EXPECT_EQ(service_->store()->EraseWithPrefix("job/"), 0)
      << "the ended job's keys came back";
}

TEST_P(PersistenceTest, SwitchRequestsAndModeHistorySurvive) {
  RegisterPs("10.0.0.9:7000");
  const std::string w1 = Register("host-a", 1);
  const std::string job = RunningJob(w1, 1);
  ASSERT_THAT(ReportSteps(w1, job,
                          {ModeStep(0, 0, SYNC_MODE_RING),
                           ModeStep(0, 1, SYNC_MODE_RING)}),
              IsOk());
  ASSERT_THAT(SwitchTo(job, SYNC_MODE_PS), IsOk());  // not delivered yet

  Restart();

  // The notice waits in the mailbox, and the directive in the store.
  const HeartbeatResponse news = Poll(w1);
  ASSERT_THAT(news.switches(), SizeIs(1));
  EXPECT_EQ(news.switches(0).epoch(), 1);
  StoreGetRequest get;
  *get.mutable_scope() = Scope(w1, job);
  get.set_key("switch/1");
  absl::StatusOr<StoreGetResponse> directive = service_->StoreGet(get);
  ASSERT_THAT(directive, IsOk());
  SwitchDirective parsed;
  ASSERT_TRUE(parsed.ParseFromString(directive->value()));
  EXPECT_EQ(parsed.mode(), SYNC_MODE_PS);

  ASSERT_THAT(ReportSteps(w1, job, {ModeStep(0, 2, SYNC_MODE_PS, 1)}), IsOk());
  Restart();
  const JobStatus status = Status(job);
  EXPECT_EQ(status.switch_requests(), 1);
  EXPECT_EQ(status.mode(), SYNC_MODE_PS);
  ASSERT_THAT(status.switches(), SizeIs(1));
  EXPECT_EQ(status.switches(0).step(), 2);
}

TEST_P(PersistenceTest, EndedJobsKeepTheirResults) {
  const std::string w1 = Register("host-a", 1);
  const std::string job = RunningJob(w1, 1);
  ReportRankRequest done;
  done.set_worker_id(w1);
  done.set_credential(Credential(w1));
  done.set_job_id(job);
  done.set_rank(0);
  done.set_state(RANK_STATE_SUCCEEDED);
  done.set_test_accuracy(0.875);
  done.set_test_loss(0.25);
  ASSERT_THAT(service_->ReportRank(done), IsOk());

  Restart();

  const JobStatus status = Status(job);
  EXPECT_EQ(status.state(), JOB_STATE_SUCCEEDED);
  EXPECT_EQ(status.test_accuracy(), 0.875);
  EXPECT_EQ(status.test_loss(), 0.25);
  CancelJobRequest cancel;
  cancel.set_job_id(job);
  EXPECT_THAT(service_->CancelJob(cancel),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

INSTANTIATE_TEST_SUITE_P(Stores, PersistenceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sqlite" : "Memory";
                         });

}  // namespace
}  // namespace testing
}  // namespace gradsync
