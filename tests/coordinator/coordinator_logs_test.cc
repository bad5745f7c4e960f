// A job's log lines (`gradsync logs`): workers send them with
// ReportMetrics, the coordinator keeps the newest of each job, and
// GetJobLogs pages through them, by rank if asked.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_service.h"
#include "server/coordinator/job_log.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

JobLogLine Line(int rank, const std::string& text, int64_t time_ms = 1000) {
  JobLogLine line;
  line.set_rank(rank);
  line.set_text(text);
  line.set_time_unix_ms(time_ms);
  return line;
}

// Ranks 0 and 1 on w-1 (host-a), rank 2 on w-2 (host-b); w-3 idle.
class LogsTest : public ThreeRankJobTest {
 protected:
  [[nodiscard]] absl::Status Send(const std::string& worker,
                                  const std::vector<JobLogLine>& lines) {
    ReportMetricsRequest request;
    request.set_worker_id(worker);
    request.set_credential(Credential(worker));
    request.set_job_id(job_);
    for (const JobLogLine& line : lines) *request.add_log_lines() = line;
    return service_->ReportMetrics(request);
  }

  [[nodiscard]] absl::StatusOr<GetJobLogsResponse> Logs(int64_t from_seq = 0,
                                                        int rank = -1) {
    GetJobLogsRequest request;
    request.set_job_id(job_);
    request.set_from_seq(from_seq);
    if (rank >= 0) request.set_rank(rank);
    return service_->GetJobLogs(request);
  }

  static std::vector<std::string> Texts(const GetJobLogsResponse& response) {
    std::vector<std::string> texts;
    for (const JobLogLine& line : response.lines()) {
      texts.push_back(line.text());
    }
    return texts;
  }
};

TEST_F(LogsTest, LinesOfEveryWorker_ComeBackInOrderWithHostAndNumbers) {
  ASSERT_THAT(Send(w1_, {Line(-1, "starting ranks [0, 1]"),
                         Line(0, "rank 0 on cpu:0", 2000)}),
              IsOk());
  ASSERT_THAT(Send(w2_, {Line(2, "rank 2 on cpu:0")}), IsOk());
  absl::StatusOr<GetJobLogsResponse> logs = Logs();
  ASSERT_THAT(logs, IsOk());
  EXPECT_THAT(Texts(*logs), ElementsAre("starting ranks [0, 1]",
                                        "rank 0 on cpu:0", "rank 2 on cpu:0"));
  EXPECT_EQ(logs->next_seq(), 3);
  EXPECT_EQ(logs->dropped(), 0);
  EXPECT_EQ(logs->state(), JOB_STATE_RENDEZVOUS);
  const JobLogLine& second = logs->lines(1);
  EXPECT_EQ(second.seq(), 1);
  EXPECT_EQ(second.worker_id(), w1_);
  EXPECT_EQ(second.host(), "host-a");
  EXPECT_EQ(second.rank(), 0);
  EXPECT_EQ(second.time_unix_ms(), 2000);
  EXPECT_EQ(logs->lines(2).host(), "host-b");

  // Following: from next_seq on there is nothing new, then the new line.
  absl::StatusOr<GetJobLogsResponse> none = Logs(3);
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(none->lines(), IsEmpty());
  EXPECT_EQ(none->next_seq(), 3);
  ASSERT_THAT(Send(w2_, {Line(2, "rank 2: rendezvous done")}), IsOk());
  absl::StatusOr<GetJobLogsResponse> next = Logs(3);
  ASSERT_THAT(next, IsOk());
  EXPECT_THAT(Texts(*next), ElementsAre("rank 2: rendezvous done"));
  EXPECT_EQ(next->next_seq(), 4);
}

TEST_F(LogsTest, ByRank_KeepsThatRanksLinesOnly) {
  ASSERT_THAT(
      Send(w1_, {Line(-1, "worker line"), Line(0, "zero"), Line(1, "one")}),
      IsOk());
  ASSERT_THAT(Send(w2_, {Line(2, "two")}), IsOk());
  absl::StatusOr<GetJobLogsResponse> one = Logs(0, 1);
  ASSERT_THAT(one, IsOk());
  EXPECT_THAT(Texts(*one), ElementsAre("one"));
  EXPECT_EQ(one->next_seq(), 4);
  EXPECT_THAT(Logs(0, 3), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("job job-1 has no rank 3")));
}

TEST_F(LogsTest, AfterTheJobEnded_LinesAreStillTaken) {
  ReportAll(job_, RANK_STATE_READY);
  ReportAll(job_, RANK_STATE_SUCCEEDED);
  ASSERT_EQ(Status(job_).state(), JOB_STATE_SUCCEEDED);
  ASSERT_THAT(Send(w1_, {Line(-1, "all local ranks ended; devices free")}),
              IsOk());
  absl::StatusOr<GetJobLogsResponse> logs = Logs();
  ASSERT_THAT(logs, IsOk());
  EXPECT_THAT(Texts(*logs), ElementsAre("all local ranks ended; devices free"));
  EXPECT_EQ(logs->state(), JOB_STATE_SUCCEEDED);
}

TEST_F(LogsTest, BadReports_AreRefusedAndRecordNothing) {
  // A rank another worker holds.
  EXPECT_THAT(Send(w1_, {Line(0, "fine"), Line(2, "not mine")}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("rank 2 of job job-1 runs on worker w-2")));
  // A worker with no rank of the job.
  EXPECT_THAT(Send(w3_, {Line(-1, "intruder")}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("'w-3' hosts no rank of job job-1")));
  // Metrics and lines in one report.
  ReportMetricsRequest mixed;
  mixed.set_worker_id(w1_);
  mixed.set_credential(Credential(w1_));
  mixed.set_job_id(job_);
  *mixed.add_log_lines() = Line(0, "x");
  *mixed.add_metrics() = Step(0, 0);
  EXPECT_THAT(service_->ReportMetrics(mixed),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("step metrics or log lines, not both")));
  // Too many lines.
  std::vector<JobLogLine> many(kMaxLogLinesPerReport + 1, Line(0, "x"));
  EXPECT_THAT(Send(w1_, many), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("at most 256")));
  // Without the credential.
  ReportMetricsRequest forged;
  forged.set_worker_id(w1_);
  forged.set_job_id(job_);
  *forged.add_log_lines() = Line(0, "forged");
  EXPECT_THAT(service_->ReportMetrics(forged),
              StatusIs(absl::StatusCode::kPermissionDenied));

  absl::StatusOr<GetJobLogsResponse> logs = Logs();
  ASSERT_THAT(logs, IsOk());
  EXPECT_THAT(logs->lines(), IsEmpty());
  EXPECT_EQ(logs->next_seq(), 0);
  EXPECT_THAT(Logs(-1), StatusIs(absl::StatusCode::kInvalidArgument));
  GetJobLogsRequest unknown;
  unknown.set_job_id("job-9");
  EXPECT_THAT(service_->GetJobLogs(unknown),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST(JobLogTest, KeepsTheNewestLinesAndCountsWhatAPagerMissed) {
  JobLog log;
  google::protobuf::RepeatedPtrField<JobLogLine> batch;
  for (size_t i = 0; i < kMaxJobLogLines + 5; ++i) {
    *batch.Add() = Line(0, std::to_string(i));
  }
  log.Append(batch, "w-1", "host-a");
  EXPECT_EQ(log.next_seq(), static_cast<int64_t>(kMaxJobLogLines + 5));
  const GetJobLogsResponse all = log.Read(0, std::nullopt, 10);
  EXPECT_EQ(all.dropped(), 5);
  ASSERT_EQ(all.lines_size(), 10);
  EXPECT_EQ(all.lines(0).seq(), 5);
  EXPECT_EQ(all.lines(0).text(), "5");
  EXPECT_EQ(all.next_seq(), 15);
  const GetJobLogsResponse rest = log.Read(15, std::nullopt, 1 << 20);
  EXPECT_EQ(rest.dropped(), 0);
  EXPECT_EQ(rest.lines_size(), static_cast<int>(kMaxJobLogLines) - 10);
  EXPECT_EQ(rest.next_seq(), log.next_seq());
  // Past the end: nothing, and next_seq stays at the end.
  EXPECT_EQ(log.Read(1 << 30, std::nullopt, 10).next_seq(), log.next_seq());
}

TEST(JobLogTest, LongLines_AreCutAtACharacterBoundary) {
  JobLog log;
  google::protobuf::RepeatedPtrField<JobLogLine> batch;
  // 'é' is two bytes: the cut must not split one.
  std::string text;
  while (text.size() < 3 * kMaxJobLogLineBytes) text += "\xc3\xa9";
  *batch.Add() = Line(-7, text);
  log.Append(batch, "w-1", "host-a");
  const GetJobLogsResponse read = log.Read(0, std::nullopt, 10);
  ASSERT_EQ(read.lines_size(), 1);
  const std::string& cut = read.lines(0).text();
  EXPECT_LE(cut.size(), kMaxJobLogLineBytes);
  EXPECT_THAT(cut, ::testing::EndsWith("\xc3\xa9 [cut]"));
  EXPECT_EQ(read.lines(0).rank(), -1);
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
