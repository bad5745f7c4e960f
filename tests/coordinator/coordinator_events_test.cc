// CoordinatorService with plain calls: what workers and users wait for —
// heartbeat long-polls and job events — and how long ended jobs are kept.
#include <string>
#include <thread>
#include <vector>

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
using ::testing::SizeIs;

using EventsTest = CoordinatorTest;

TEST_F(EventsTest, Heartbeat_NoNews_ReturnsEmptyAfterItsWait) {
  const std::string w1 = Register("host-a", 1);
  HeartbeatRequest request;
  request.set_worker_id(w1);
  request.set_credential(Credential(w1));
  request.set_wait_ms(20);
  absl::StatusOr<HeartbeatResponse> news = service_->Heartbeat(request);
  ASSERT_THAT(news, IsOk());
  EXPECT_THAT(news->assignments(), IsEmpty());
  EXPECT_THAT(news->cancel_job_ids(), IsEmpty());
}

TEST_F(EventsTest, Heartbeat_NewsWhileWaiting_WakesTheLongPoll) {
  const std::string w1 = Register("host-a", 1);
  absl::Duration took;
  const absl::StatusOr<HeartbeatResponse> news = LongPoll(
      w1, [&] { ASSERT_THAT(Submit(ValidSpec(1)), IsOk()); }, &took);
  ASSERT_THAT(news, IsOk());
  EXPECT_THAT(news->assignments(), SizeIs(1));
  EXPECT_LT(took, absl::Seconds(2));
}

TEST_F(EventsTest, Heartbeat_CallerCancels_KeepsNewsForTheNextHeartbeat) {
  const std::string w1 = Register("host-a", 1);
  HeartbeatRequest request;
  request.set_worker_id(w1);
  request.set_credential(Credential(w1));
  request.set_wait_ms(1000);
  EXPECT_THAT(
      service_->Heartbeat(request, absl::InfiniteFuture(), [] { return true; }),
      StatusIs(absl::StatusCode::kCancelled));
  ASSERT_THAT(Submit(ValidSpec(1)), IsOk());
  EXPECT_THAT(Poll(w1).assignments(), SizeIs(1));
}

TEST_F(EventsTest, Heartbeat_UnknownWorker_ReturnsNotFound) {
  HeartbeatRequest request;
  request.set_worker_id("w-9");
  request.set_credential(Credential("w-9"));
  EXPECT_THAT(service_->Heartbeat(request),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("register")));
}

TEST_F(EventsTest, WaitForJobEvent_ReportsEachChangeUntilTheJobEnds) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  JobWatchCursor cursor;
  const absl::Time soon = absl::Now() + absl::Seconds(10);

  auto first = service_->WaitForJobEvent(*job, &cursor, soon);
  ASSERT_THAT(first, IsOk());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->status().state(), JOB_STATE_RENDEZVOUS);

  // Nothing new: the wait ends at its deadline without an event.
  auto none = service_->WaitForJobEvent(*job, &cursor,
                                        absl::Now() + absl::Milliseconds(20));
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->has_value());

  ASSERT_THAT(Report(w1, *job, 0, RANK_STATE_READY), IsOk());
  ASSERT_THAT(ReportSteps(w1, *job, {Step(0, 0, 2.5), Step(0, 1, 2.0)}),
              IsOk());
  auto running = service_->WaitForJobEvent(*job, &cursor, soon);
  ASSERT_THAT(running, IsOk());
  ASSERT_TRUE(running->has_value());
  EXPECT_EQ((*running)->status().state(), JOB_STATE_RUNNING);
  ASSERT_THAT((*running)->steps(), SizeIs(2));
  EXPECT_DOUBLE_EQ((*running)->steps(1).loss(), 2.0);
  EXPECT_FALSE(cursor.done);

  std::thread finisher([&] {
    EXPECT_THAT(Report(w1, *job, 0, RANK_STATE_SUCCEEDED, 1), IsOk());
  });
  auto last = service_->WaitForJobEvent(*job, &cursor, soon);
  finisher.join();
  ASSERT_THAT(last, IsOk());
  ASSERT_TRUE(last->has_value());
  EXPECT_THAT((*last)->steps(), IsEmpty());
  EXPECT_EQ((*last)->status().state(), JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(cursor.done);
  auto after = service_->WaitForJobEvent(*job, &cursor, soon);
  ASSERT_THAT(after, IsOk());
  EXPECT_FALSE(after->has_value());
}

TEST_F(EventsTest, WaitForJobEvent_ManySteps_SplitsThemOverEvents) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  const int total = CoordinatorService::kMaxStepsPerEvent + 10;
  std::vector<StepMetrics> steps;
  steps.reserve(total);
  for (int s = 0; s < total; ++s) steps.push_back(Step(0, s));
  ASSERT_THAT(ReportSteps(w1, *job, steps), IsOk());
  JobWatchCursor cursor;
  const absl::Time soon = absl::Now() + absl::Seconds(10);
  auto first = service_->WaitForJobEvent(*job, &cursor, soon);
  ASSERT_THAT(first, IsOk());
  EXPECT_THAT((*first)->steps(), SizeIs(CoordinatorService::kMaxStepsPerEvent));
  auto second = service_->WaitForJobEvent(*job, &cursor, soon);
  ASSERT_THAT(second, IsOk());
  ASSERT_TRUE(second->has_value());
  EXPECT_THAT((*second)->steps(), SizeIs(10));
  EXPECT_EQ((*second)->steps(9).step(), total - 1);
}

TEST_F(EventsTest, WaitForJobEvent_UnknownJob_ReturnsNotFound) {
  JobWatchCursor cursor;
  EXPECT_THAT(service_->WaitForJobEvent("job-3", &cursor, absl::Now()),
              StatusIs(absl::StatusCode::kNotFound));
}

class RetentionTest : public CoordinatorTest {
 protected:
  RetentionTest() { retained_ended_jobs_ = 1; }
};

TEST_F(RetentionTest, EndedJobs_BeyondRetention_AreDropped) {
  Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  ASSERT_THAT(a, IsOk());
  ReportAll(*a, RANK_STATE_SUCCEEDED);
  absl::StatusOr<std::string> b = Submit(ValidSpec(1));
  ASSERT_THAT(b, IsOk());
  ReportAll(*b, RANK_STATE_SUCCEEDED);
  GetJobRequest request;
  request.set_job_id(*a);
  EXPECT_THAT(service_->GetJob(request), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(Status(*b).state(), JOB_STATE_SUCCEEDED);
  EXPECT_THAT(service_->ListJobs().jobs(), SizeIs(1));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
