// CoordinatorService runtime switches: SwitchJob's errors change nothing;
// a request writes its directive into the job's store and reaches the
// job's workers through their (long-poll) heartbeats; requests for pending
// jobs follow the assignment; JobStatus.mode and .switches come from rank
// 0's step metrics, whatever their arrival order.
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

using SwitchTest = CoordinatorTest;

// The directive stored under "switch/<epoch>" of the job's generation.
[[nodiscard]] absl::StatusOr<SwitchDirective> ReadDirective(
    CoordinatorService& service, const StoreScope& scope, int64_t epoch) {
  StoreGetRequest request;
  *request.mutable_scope() = scope;
  request.set_key(SwitchDirectiveKey(epoch));
  request.set_timeout_ms(0);
  absl::StatusOr<StoreGetResponse> response = service.StoreGet(request);
  if (!response.ok()) return response.status();
  SwitchDirective directive;
  if (!directive.ParseFromString(response->value())) {
    return absl::DataLossError("not a SwitchDirective");
  }
  return directive;
}

// A running ring job with one rank on each of two workers.
class RunningJobTest : public SwitchTest {
 protected:
  void SetUp() override {
    SwitchTest::SetUp();
    w1_ = Register("host-a", 1);
    w2_ = Register("host-b", 1);
    absl::StatusOr<std::string> job = Submit(ValidSpec(2));
    ASSERT_THAT(job, IsOk());
    job_ = *job;
    Poll(w1_);
    Poll(w2_);
    ReportAll(job_, RANK_STATE_READY);
  }

  std::string w1_, w2_, job_;
};

TEST_F(RunningJobTest, SwitchJob_Errors_ChangeNothing) {
  EXPECT_THAT(SwitchTo("job-9", SYNC_MODE_PS),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(SwitchTo(job_, SYNC_MODE_UNSPECIFIED),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("SYNC_MODE_RING or SYNC_MODE_PS")));
  EXPECT_THAT(SwitchTo(job_, static_cast<SyncMode>(7)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SwitchTo(job_, SYNC_MODE_PS),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no parameter server registered")));
  const JobStatus status = Status(job_);
  EXPECT_EQ(status.switch_requests(), 0);
  EXPECT_THAT(status.ps_addresses(), IsEmpty());
  EXPECT_THAT(Poll(w1_).switches(), IsEmpty());
  EXPECT_THAT(ReadDirective(*service_, Scope(w1_, job_, 1), 1),
              StatusIs(absl::StatusCode::kDeadlineExceeded));

  ReportAll(job_, RANK_STATE_SUCCEEDED);
  RegisterPs("10.0.0.1:1");
  EXPECT_THAT(SwitchTo(job_, SYNC_MODE_PS),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("already ended")));
  EXPECT_EQ(Status(job_).switch_requests(), 0);
  EXPECT_THAT(Status(job_).ps_addresses(), IsEmpty());
}

TEST_F(RunningJobTest, SwitchJob_ToPs_PlacesShardsWritesDirectiveNotifies) {
  RegisterPs("10.0.0.1:1");
  RegisterPs("10.0.0.2:1");
  absl::StatusOr<SwitchJobResponse> response = SwitchTo(job_, SYNC_MODE_PS);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->epoch(), 1);
  EXPECT_EQ(response->status().switch_requests(), 1);
  EXPECT_THAT(response->status().ps_addresses(),
              ElementsAre("10.0.0.1:1", "10.0.0.2:1"));
  // Not switched yet: the ranks have not reported a step in PS mode.
  EXPECT_EQ(response->status().mode(), SYNC_MODE_RING);

  absl::StatusOr<SwitchDirective> directive =
      ReadDirective(*service_, Scope(w2_, job_, 1), 1);
  ASSERT_THAT(directive, IsOk());
  EXPECT_EQ(directive->epoch(), 1);
  EXPECT_EQ(directive->mode(), SYNC_MODE_PS);
  EXPECT_THAT(directive->ps_addresses(),
              ElementsAre("10.0.0.1:1", "10.0.0.2:1"));
  EXPECT_TRUE(service_->store()
                  ->Get(absl::StrCat("job/", job_, "/gen/1/switch/1"),
                        absl::InfinitePast())
                  .ok());

  for (const std::string& worker : {w1_, w2_}) {
    const HeartbeatResponse news = Poll(worker);
    ASSERT_THAT(news.switches(), SizeIs(1)) << worker;
    EXPECT_EQ(news.switches(0).job_id(), job_);
    EXPECT_EQ(news.switches(0).epoch(), 1);
    EXPECT_THAT(Poll(worker).switches(), IsEmpty());  // delivered once
  }

  // Back to ring: the same shards are named (the ranks fetch from them).
  response = SwitchTo(job_, SYNC_MODE_RING);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->epoch(), 2);
  directive = ReadDirective(*service_, Scope(w1_, job_, 1), 2);
  ASSERT_THAT(directive, IsOk());
  EXPECT_EQ(directive->mode(), SYNC_MODE_RING);
  EXPECT_THAT(directive->ps_addresses(), SizeIs(2));
}

TEST_F(RunningJobTest, SwitchJob_RequestsBeforeAHeartbeat_CollapseIntoNewest) {
  RegisterPs("10.0.0.1:1");
  ASSERT_THAT(SwitchTo(job_, SYNC_MODE_PS), IsOk());
  ASSERT_THAT(SwitchTo(job_, SYNC_MODE_RING), IsOk());
  ASSERT_THAT(SwitchTo(job_, SYNC_MODE_PS), IsOk());
  const HeartbeatResponse news = Poll(w1_);
  ASSERT_THAT(news.switches(), SizeIs(1));
  EXPECT_EQ(news.switches(0).epoch(), 3);
  // Every directive stays readable.
  EXPECT_THAT(ReadDirective(*service_, Scope(w1_, job_, 1), 2), IsOk());
}

TEST_F(RunningJobTest, SwitchJob_WakesAWaitingHeartbeatPromptly) {
  RegisterPs("10.0.0.1:1");
  absl::Duration took;
  const absl::StatusOr<HeartbeatResponse> news = LongPoll(
      w1_, [&] { ASSERT_THAT(SwitchTo(job_, SYNC_MODE_PS), IsOk()); }, &took);
  ASSERT_THAT(news, IsOk());
  ASSERT_THAT(news->switches(), SizeIs(1));
  EXPECT_EQ(news->switches(0).epoch(), 1);
  EXPECT_LT(took, absl::Seconds(1));
}

TEST_F(RunningJobTest, JobEnds_UndeliveredNoticesAreWithdrawn) {
  RegisterPs("10.0.0.1:1");
  ASSERT_THAT(SwitchTo(job_, SYNC_MODE_PS), IsOk());
  CancelJobRequest cancel;
  cancel.set_job_id(job_);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  const HeartbeatResponse news = Poll(w1_);
  EXPECT_THAT(news.switches(), IsEmpty());
  EXPECT_THAT(news.cancel_job_ids(), ElementsAre(job_));
}

TEST_F(SwitchTest, SwitchJob_PendingJob_NoticeFollowsTheAssignment) {
  const std::string w1 = Register("host-a", 1);
  RegisterPs("10.0.0.1:1");
  absl::StatusOr<std::string> first = Submit(ValidSpec(1));
  absl::StatusOr<std::string> pending = Submit(ValidSpec(1));
  ASSERT_THAT(pending, IsOk());
  Poll(w1);
  absl::StatusOr<SwitchJobResponse> response = SwitchTo(*pending, SYNC_MODE_PS);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->epoch(), 1);
  EXPECT_EQ(response->status().state(), JOB_STATE_PENDING);
  EXPECT_THAT(Poll(w1).switches(), IsEmpty());  // no rank placed yet

  ReportAll(*first, RANK_STATE_SUCCEEDED);
  const HeartbeatResponse news = Poll(w1);
  ASSERT_THAT(news.assignments(), SizeIs(1));
  EXPECT_EQ(news.assignments(0).job_id(), *pending);
  EXPECT_THAT(news.assignments(0).ps_addresses(), ElementsAre("10.0.0.1:1"));
  ASSERT_THAT(news.switches(), SizeIs(1));
  EXPECT_EQ(news.switches(0).job_id(), *pending);
  EXPECT_EQ(news.switches(0).epoch(), 1);
  absl::StatusOr<SwitchDirective> directive =
      ReadDirective(*service_, Scope(w1, *pending, 1), 1);
  ASSERT_THAT(directive, IsOk());
  EXPECT_EQ(directive->mode(), SYNC_MODE_PS);
  EXPECT_THAT(directive->ps_addresses(), ElementsAre("10.0.0.1:1"));
}

TEST_F(RunningJobTest, Mode_FollowsRankZerosSteps_InAnyArrivalOrder) {
  EXPECT_EQ(Status(job_).mode(), SYNC_MODE_RING);  // the spec's, no step yet
  // Rank 0 on w-1: ring 0-1, PS from 2 (request 1), ring again from 4
  // (scripted); batches out of order. Rank 1 says PS throughout: ignored.
  ASSERT_THAT(ReportSteps(w1_, job_,
                          {ModeStep(0, 3, SYNC_MODE_PS, 0),
                           ModeStep(0, 0, SYNC_MODE_RING)}),
              IsOk());
  EXPECT_EQ(Status(job_).mode(), SYNC_MODE_PS);
  ASSERT_THAT(ReportSteps(w2_, job_, {ModeStep(1, 5, SYNC_MODE_PS)}), IsOk());
  ASSERT_THAT(ReportSteps(w1_, job_, {ModeStep(0, 4, SYNC_MODE_RING)}), IsOk());
  ASSERT_THAT(ReportSteps(w1_, job_,
                          {ModeStep(0, 2, SYNC_MODE_PS, 1),
                           ModeStep(0, 1, SYNC_MODE_RING)}),
              IsOk());
  const JobStatus status = Status(job_);
  EXPECT_EQ(status.mode(), SYNC_MODE_RING);
  ASSERT_THAT(status.switches(), SizeIs(2));
  EXPECT_EQ(status.switches(0).step(), 2);
  EXPECT_EQ(status.switches(0).from_mode(), SYNC_MODE_RING);
  EXPECT_EQ(status.switches(0).to_mode(), SYNC_MODE_PS);
  EXPECT_EQ(status.switches(0).epoch(), 1);
  EXPECT_EQ(status.switches(1).step(), 4);
  EXPECT_EQ(status.switches(1).from_mode(), SYNC_MODE_PS);
  EXPECT_EQ(status.switches(1).to_mode(), SYNC_MODE_RING);
  EXPECT_EQ(status.switches(1).epoch(), 0);
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
