// MetricsReporter: queued metrics reach the coordinator in batches, Flush
// waits for them, and an unreachable coordinator drops them without
// blocking the caller.
#include "worker/daemon/metrics_reporter.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <string>
#include <vector>

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

TEST(MetricsReporterTest, Unreachable_DropsWithoutBlockingAdd) {
  const std::string address = UnusedAddress();
  std::vector<std::string> log;
  MetricsReporterOptions options;
  options.rpc_timeout = absl::Milliseconds(200);
  options.retry_delay = absl::Milliseconds(10);
  MetricsReporter reporter(
      NewTestClient(address), "w-1", "job-1", options,
      [&log](absl::string_view line) { log.emplace_back(line); });
  const absl::Time start = absl::Now();
  for (int64_t s = 0; s < 50; ++s) reporter.Add(Metric(0, s));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(50));
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
  EXPECT_EQ(reporter.dropped(), 50);
  EXPECT_EQ(reporter.sent(), 0);
  ASSERT_EQ(log.size(), 1u);  // logged once, then only counted
  EXPECT_THAT(log[0], ::testing::HasSubstr("step metrics dropped"));
}

TEST(MetricsReporterTest, QueueOverflow_DropsOldest) {
  const std::string address = UnusedAddress();
  MetricsReporterOptions options;
  options.max_queued = 10;
  options.rpc_timeout = absl::Milliseconds(100);
  options.retry_delay = absl::Milliseconds(10);
  MetricsReporter reporter(NewTestClient(address), "w-1", "job-1", options,
                           nullptr);
  for (int64_t s = 0; s < 1000; ++s) reporter.Add(Metric(0, s));
  ASSERT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
  EXPECT_EQ(reporter.dropped() + reporter.sent(), 1000);
}

TEST(MetricsReporterTest, Flush_DeadlinePassed_ReturnsDeadlineExceeded) {
  FakeCoordinatorServer server;
  MetricsReporter reporter(server.NewClient(), "w-1", "job-1", {}, nullptr);
  reporter.Add(Metric(0, 0));
  EXPECT_THAT(
      reporter.Flush(absl::Now() - absl::Seconds(1)),
      ::testing::AnyOf(IsOk(), StatusIs(absl::StatusCode::kDeadlineExceeded)));
  EXPECT_THAT(reporter.Flush(absl::Now() + absl::Seconds(10)), IsOk());
}

}  // namespace
}  // namespace gradsync
