// The small helpers of common/ that every daemon and the CLI share: JSON
// numbers and strings, byte counts, host names and addresses, exit
// statuses, RPC deadlines.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/time/clock.h"
#include "common/host.h"
#include "common/json.h"
#include "common/rpc_deadline.h"
#include "common/units.h"
#include "common/wait_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

TEST(JsonTest, Quote_EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("l1\nl2\r\t"), "\"l1\\nl2\\r\\t\"");
  EXPECT_EQ(JsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(JsonQuote("h\xc3\xa9"), "\"h\xc3\xa9\"");  // UTF-8 as it is
}

TEST(JsonTest, Number_ShortestThatReadsBack) {
  EXPECT_EQ(JsonNumber(0.1), "0.1");
  EXPECT_EQ(JsonNumber(3), "3");
  EXPECT_EQ(JsonNumber(-2.5), "-2.5");
  EXPECT_EQ(JsonNumber(1.0 / 3), "0.3333333333333333");
}

TEST(JsonTest, Number_RoundedToTheDigitsAsked) {
  EXPECT_EQ(JsonNumber(84.93999999, 6), "84.94");
  EXPECT_EQ(JsonNumber(1234567.0, 6), "1.23457e+06");
}

TEST(JsonTest, Number_NonFiniteAsProtobufWritesThem) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int digits : {0, 6}) {
    SCOPED_TRACE(digits);
    auto json = [digits](double v) {
      return digits == 0 ? JsonNumber(v) : JsonNumber(v, digits);
    };
    EXPECT_EQ(json(std::nan("")), "\"NaN\"");
    EXPECT_EQ(json(inf), "\"Infinity\"");
    EXPECT_EQ(json(-inf), "\"-Infinity\"");
  }
}

TEST(UnitsTest, FormatBytes_FixedDecimalsForTables) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(12.5 * 1024 * 1024), "12.5 MiB");
  EXPECT_EQ(FormatBytes(2.0 * (1 << 30)), "2.00 GiB");
  EXPECT_EQ(FormatBytes(-1), "-");
  EXPECT_EQ(FormatBytes(std::nan("")), "-");
}

TEST(UnitsTest, FormatSize_AsShortAsItCanBeSaid) {
  EXPECT_EQ(FormatSize(100), "100 B");
  EXPECT_EQ(FormatSize(1024), "1 KiB");
  EXPECT_EQ(FormatSize(size_t{64} << 20), "64 MiB");
  EXPECT_EQ(FormatSize(size_t{3} << 29), "1.5 GiB");
}

TEST(HostTest, HostName_IsNeverEmpty) { EXPECT_FALSE(HostName().empty()); }

TEST(HostTest, IsHostPort_NeedsAHostAndAPortInRange) {
  EXPECT_TRUE(IsHostPort("127.0.0.1:29400"));
  EXPECT_TRUE(IsHostPort("node-a:1"));
  EXPECT_TRUE(IsHostPort("[::1]:65535"));
  EXPECT_FALSE(IsHostPort("node-a"));
  EXPECT_FALSE(IsHostPort(":29400"));
  EXPECT_FALSE(IsHostPort("node-a:0"));
  EXPECT_FALSE(IsHostPort("node-a:65536"));
  EXPECT_FALSE(IsHostPort("node-a:http"));
}

// The wait status of a child that ran `body`.
int WaitStatusOf(void (*body)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(WaitStatusTest, DescribeExit_SaysHowTheChildEnded) {
  EXPECT_EQ(DescribeExit(WaitStatusOf([] { _exit(3); })),
            "exited with status 3");
  const std::string killed = DescribeExit(WaitStatusOf([] { raise(SIGKILL); }));
  EXPECT_THAT(killed, HasSubstr("was killed by signal 9 ("));
}

TEST(RpcDeadlineTest, MillisecondsUntil_RoundsUpAndNeverGoesNegative) {
  EXPECT_EQ(MillisecondsUntil(absl::InfiniteFuture()), INT64_MAX);
  EXPECT_EQ(MillisecondsUntil(absl::Now() - absl::Seconds(1)), 0);
  const int64_t ms = MillisecondsUntil(absl::Now() + absl::Seconds(5));
  EXPECT_GT(ms, 4000);
  EXPECT_LE(ms, 5000);
}

}  // namespace
}  // namespace gradsync
