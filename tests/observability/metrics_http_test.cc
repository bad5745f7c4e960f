// The /metrics endpoint (observability/metrics_http.h) over a real socket: what
// a scrape returns, the content type, other paths and methods, a port taken
// twice, bad addresses, the flag, promtool's verdict on the text when
// promtool is installed, and floods of idle and garbage connections.
#include "observability/metrics_http.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/metrics_scrape.h"
#include "tests/util/socket_flood.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

class MetricsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<CounterFamily*> steps = registry_.AddCounter(
        "gradsync_test_steps_total", "Steps run.", {"mode"});
    ASSERT_TRUE(steps.ok()) << steps.status();
    (*(*steps)->WithLabels({"ring"}))->Increment(5);
    absl::StatusOr<HistogramFamily*> latency = registry_.AddHistogram(
        "gradsync_test_latency_seconds", "Latency.", {}, {0.01, 0.1});
    ASSERT_TRUE(latency.ok()) << latency.status();
    (*(*latency)->WithLabels({}))->Observe(0.05);
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
        MetricsHttpServer::Start("127.0.0.1:0", &registry_, "test daemon");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  MetricsRegistry registry_;
  std::unique_ptr<MetricsHttpServer> server_;
};

TEST_F(MetricsHttpTest, Get_ServesTheRegistry_InTextFormat) {
  ASSERT_GT(server_->port(), 0);
  absl::StatusOr<MetricsResponse> response =
      HttpRequest(server_->address(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(200, response->status);
  EXPECT_EQ(kMetricsContentType, response->content_type);
  EXPECT_EQ(registry_.Render(), response->body);
  EXPECT_EQ(5, SampleValue(response->body,
                           "gradsync_test_steps_total{mode=\"ring\"}"));
}

TEST_F(MetricsHttpTest, Scrape_SeesValuesOfThatMoment) {
  absl::StatusOr<GaugeFamily*> gauge =
      registry_.AddGauge("gradsync_test_live", "Live.");
  ASSERT_TRUE(gauge.ok());
  (*(*gauge)->WithLabels({}))->Set(1);
  absl::StatusOr<std::string> first = ScrapeMetrics(server_->address());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(1, SampleValue(*first, "gradsync_test_live"));
  (*(*gauge)->WithLabels({}))->Set(2);
  absl::StatusOr<std::string> second = ScrapeMetrics(server_->address());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(2, SampleValue(*second, "gradsync_test_live"));
}

TEST_F(MetricsHttpTest, Healthz_AnswersOk) {
  absl::StatusOr<MetricsResponse> health =
      HttpRequest(server_->address(), "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(200, health->status);
  EXPECT_EQ("ok\n", health->body);
}

TEST_F(MetricsHttpTest, OtherPath_Returns404_OtherMethod_Returns405) {
  absl::StatusOr<MetricsResponse> other = HttpRequest(server_->address(), "/");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(404, other->status);
  absl::StatusOr<MetricsResponse> post =
      HttpRequest(server_->address(), "/metrics", "POST");
  ASSERT_TRUE(post.ok()) << post.status();
  EXPECT_EQ(405, post->status);
}

TEST_F(MetricsHttpTest, SamePortTwice_ReturnsUnavailable) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> second =
      MetricsHttpServer::Start(server_->address(), &registry_, "ps");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(absl::StatusCode::kUnavailable, second.status().code());
  EXPECT_THAT(second.status().message(),
              HasSubstr("ps could not serve metrics on"));
}

TEST_F(MetricsHttpTest, Shutdown_StopsServing_AndIsIdempotent) {
  const std::string address = server_->address();
  server_->Shutdown();
  server_->Shutdown();
  EXPECT_FALSE(HttpRequest(address, "/metrics").ok());
}

TEST_F(MetricsHttpTest, Promtool_AcceptsTheText) {
  const std::optional<std::string> promtool = FindPromtool();
  if (!promtool) {
    if (ToolsRequired()) {
      FAIL() << "promtool not found, and GRADSYNC_REQUIRE_TOOLS=1 "
                "(scripts/install_deps.sh extracts it to "
                "/usr/local/bin/promtool)";
    }
    GTEST_SKIP() << "promtool not found (Debian package prometheus, or set "
                    "$PROMTOOL); the text format is checked exactly by "
                    "prometheus_test instead";
  }
  absl::StatusOr<std::string> text = ScrapeMetrics(server_->address());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(PromtoolCheck(*promtool, *text).ok())
      << PromtoolCheck(*promtool, *text);
}

// A client socket connected to `address` ("127.0.0.1:port"); -1 on error.
int Dial(const std::string& address) {
  return testing::DialLoopback(
      std::stoi(address.substr(address.rfind(':') + 1)));
}

TEST_F(MetricsHttpTest, IdleAndGarbageFloods_DoNotStopAScrape) {
  // Trust finding 5: 16 silent connections stopped /metrics, two delayed
  // a scrape by 4 s. Now 2,000 idle and 2,000 garbage connections (fewer
  // where the fd limit says so) leave a scrape answered at once.
  const int each = std::min(2000, testing::SocketBudget() / 2);
  ASSERT_GT(each, 2 * kMetricsMaxConnections) << "too few file descriptors";
  std::vector<int> fds;
  for (int i = 0; i < each; ++i) {
    const int idle = Dial(server_->address());
    if (idle >= 0) fds.push_back(idle);
    const int garbage = Dial(server_->address());
    if (garbage >= 0) {
      const char junk[] = "\x16\x03\x01 not http at all, and no end";
      (void)!write(garbage, junk, sizeof(junk) - 1);
      fds.push_back(garbage);
    }
  }
  EXPECT_GE(fds.size(), static_cast<size_t>(each));
  // Before, behind this many silent connections, a scrape got nothing.
  // Now it is answered within a second (its own client gives up at 5 s).
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> text = ScrapeMetrics(server_->address());
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_LT(took, absl::Seconds(1)) << "the scrape took " << took;
  EXPECT_THAT(*text, HasSubstr("gradsync_test_steps_total{mode=\"ring\"} 5"));
  for (int fd : fds) close(fd);
}

TEST_F(MetricsHttpTest, SilentConnection_IsClosedAfterTheRequestTimeout) {
  const int fd = Dial(server_->address());
  ASSERT_GE(fd, 0);
  // Blocks until the server closes it (read returns 0), bounded by the
  // socket's own timeout well past kMetricsRequestTimeout.
  timeval wait{};
  wait.tv_sec = absl::ToInt64Seconds(kMetricsRequestTimeout) + 5;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  char byte;
  EXPECT_EQ(read(fd, &byte, 1), 0) << "the server kept a silent connection";
  close(fd);
}

TEST(MetricsHttpStartTest, BadAddress_ReturnsInvalidArgument) {
  MetricsRegistry registry;
  for (const char* address : {"9400", ":9400", "host:port", "h:70000", ""}) {
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
        MetricsHttpServer::Start(address, &registry, "coordinator");
    ASSERT_FALSE(server.ok()) << address;
    EXPECT_EQ(absl::StatusCode::kInvalidArgument, server.status().code());
    EXPECT_THAT(server.status().message(),
                HasSubstr("coordinator metrics listen address"));
  }
}

TEST(MetricsListenFlagTest, ParsesHostPort_RefusesOthers) {
  std::string listen;
  std::vector<FlagSpec> flags = {MetricsListenFlag(&listen)};
  ASSERT_TRUE(ParseFlags({"--metrics-listen", "0.0.0.0:9400"}, flags).ok());
  EXPECT_EQ("0.0.0.0:9400", listen);
  absl::StatusOr<std::vector<std::string>> bad =
      ParseFlags({"--metrics-listen=9400"}, flags);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--metrics-listen '9400'"));
}

}  // namespace
}  // namespace gradsync
