// MetricsReporter: queued metrics reach the coordinator in batches, Flush
// waits for them, a coordinator away for a moment (a restart) gets them
// when it is back, and one away for longer than the outage tolerance has
// them dropped, never blocking the caller.
#include "worker/daemon/metrics_reporter.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::NewTestClient;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::UnusedAddress;

StepMetrics Metric(int rank, int64_t step) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  return m;
}

TEST(MetricsReporterTest, AddThenFlush_EverythingArrivesInOrder) {
  FakeCoordinatorServer server;
  MetricsReporter reporter(server.NewClient(), "w-1", "job-1", {}, nullptr);
  for (int64_t s = 0; s < 100; ++s) {
    reporter.Add(Metric(0, s));
    reporter.Add(Metric(1, s));
  }
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
  const std::vector<StepMetrics> got = server.fake().metrics();
  ASSERT_EQ(got.size(), 200u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].step(), static_cast<int64_t>(i / 2));
    EXPECT_EQ(got[i].rank(), static_cast<int>(i % 2));
  }
  EXPECT_EQ(reporter.sent(), 200);
  EXPECT_EQ(reporter.dropped(), 0);
}

TEST(MetricsReporterTest, LogLines_TravelInReportsOfTheirOwn) {
  FakeCoordinatorServer server;
  MetricsReporter reporter(server.NewClient(), "w-1", "job-1", {}, nullptr);
  reporter.Add(Metric(0, 0));
  for (int i = 0; i < kMaxLogLinesPerReport + 10; ++i) {
    reporter.AddLogLine(i % 2, absl::StrCat("line ", i));
  }
  reporter.AddLogLine(-1, "the last");
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
  // The fake refuses a report with both; every line arrived, in order.
  const std::vector<JobLogLine> lines = server.fake().log_lines();
  ASSERT_EQ(lines.size(), static_cast<size_t>(kMaxLogLinesPerReport + 11));
  for (int i = 0; i < kMaxLogLinesPerReport + 10; ++i) {
    EXPECT_EQ(lines[i].text(), absl::StrCat("line ", i));
    EXPECT_EQ(lines[i].rank(), i % 2);
    EXPECT_GT(lines[i].time_unix_ms(), 0);
  }
  EXPECT_EQ(lines.back().rank(), -1);
  EXPECT_EQ(server.fake().metrics().size(), 1u);
}

TEST(LogLineRankTest, ReadsTheRankALineIsAbout) {
  EXPECT_EQ(LogLineRank("rank 3: rendezvous failed"), 3);
  EXPECT_EQ(LogLineRank("rank 12 on cpu:0"), 12);
  EXPECT_EQ(LogLineRank("rank 0"), 0);
  EXPECT_EQ(LogLineRank("starting ranks [0, 1] of 4"), -1);
  EXPECT_EQ(LogLineRank("rank x: no"), -1);
  EXPECT_EQ(LogLineRank("rank 3x: no"), -1);
  EXPECT_EQ(LogLineRank("rank 12345678901: too long"), -1);
  EXPECT_EQ(LogLineRank("switch request 2 heard"), -1);
}

TEST(MetricsReporterTest, Unreachable_DropsWithoutBlockingAdd) {
  const std::string address = UnusedAddress();
  std::vector<std::string> log;
  MetricsReporterOptions options;
  options.rpc_timeout = absl::Milliseconds(200);
  options.retry_delay = absl::Milliseconds(10);
  options.outage_tolerance = absl::Milliseconds(300);
  MetricsReporter reporter(
      NewTestClient(address), "w-1", "job-1", options,
      [&log](absl::string_view line) { log.emplace_back(line); });
  const absl::Time start = absl::Now();
  for (int64_t s = 0; s < 50; ++s) reporter.Add(Metric(0, s));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(50));
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(20)), IsOk());
  EXPECT_EQ(reporter.dropped(), 50);
  EXPECT_EQ(reporter.sent(), 0);
  // The outage once, the drop once, then only counted.
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], ::testing::HasSubstr("retrying for up to 300ms"));
  EXPECT_THAT(log[1], ::testing::HasSubstr("step metrics dropped"));
}

// A coordinator restarting (--state-db) is away for a moment: the metrics
// of that moment wait and arrive, none dropped.
TEST(MetricsReporterTest, CoordinatorBackWithinTolerance_NothingDropped) {
  const std::string address = UnusedAddress();
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  std::vector<std::string> log;
  absl::Mutex log_mu;
  MetricsReporterOptions options;
  options.rpc_timeout = absl::Milliseconds(200);
  options.retry_delay = absl::Milliseconds(20);
  MetricsReporter reporter(NewTestClient(address), "w-1", "job-1", options,
                           [&](absl::string_view line) {
                             absl::MutexLock lock(&log_mu);
                             log.emplace_back(line);
                           });
  for (int64_t s = 0; s < 30; ++s) reporter.Add(Metric(0, s));
  absl::SleepFor(absl::Milliseconds(500));  // the coordinator is away
  FakeCoordinatorServer server(port);
  for (int64_t s = 30; s < 40; ++s) reporter.Add(Metric(0, s));
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(20)), IsOk());
  EXPECT_EQ(reporter.dropped(), 0);
  EXPECT_EQ(reporter.sent(), 40);
  const std::vector<StepMetrics> got = server.fake().metrics();
  ASSERT_EQ(got.size(), 40u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].step(), static_cast<int64_t>(i));
  }
  absl::MutexLock lock(&log_mu);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], ::testing::HasSubstr("holding step metrics"));
  EXPECT_THAT(log[1], ::testing::HasSubstr("reachable again"));
}

TEST(MetricsReporterTest, QueueOverflow_DropsOldest) {
  const std::string address = UnusedAddress();
  MetricsReporterOptions options;
  options.max_queued = 10;
  options.rpc_timeout = absl::Milliseconds(100);
  options.retry_delay = absl::Milliseconds(10);
  options.outage_tolerance = absl::Milliseconds(100);
  MetricsReporter reporter(NewTestClient(address), "w-1", "job-1", options,
                           nullptr);
  for (int64_t s = 0; s < 1000; ++s) reporter.Add(Metric(0, s));
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
  EXPECT_EQ(reporter.dropped() + reporter.sent(), 1000);
}

TEST(MetricsReporterTest, Flush_DeadlinePassed_ReturnsDeadlineExceeded) {
  FakeCoordinatorServer server;
  // The coordinator holds the report, so it is surely unsent at the past
  // deadline: Flush must say so, not OK.
  server.fake().HoldMetrics(true);
  MetricsReporter reporter(server.NewClient(), "w-1", "job-1", {}, nullptr);
  reporter.Add(Metric(0, 0));
  EXPECT_THAT(reporter.Flush(absl::Now() - absl::Seconds(1)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  server.fake().HoldMetrics(false);
  EXPECT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
}

}  // namespace
}  // namespace gradsync
