// The local launcher's process handling, with /bin/sh standing in for the
// rank binary: sh -c SCRIPT --rank R ... runs SCRIPT with $1 = R.
#include "cli/bench/launcher.h"

#include <stdlib.h>

#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

using ::testing::HasSubstr;

LaunchSpec ShellRanks(const std::string& script, int ranks) {
  LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", script};
  spec.ranks = ranks;
  spec.deadline = absl::Seconds(30);
  return spec;
}

TEST(LauncherTest, AllRanksSucceed_ReturnsZero) {
  absl::StatusOr<int> status = RunLocalRanks(ShellRanks("exit 0", 3), 2);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 0);
}

TEST(LauncherTest, RanksSeeTheirRankWorldStoreAndJob) {
  absl::StatusOr<int> status =
      RunLocalRanks(ShellRanks("[ \"$2\" = --world ] && [ \"$3\" = 2 ] && "
                               "[ \"$4\" = --store ] && [ -n \"$5\" ] && "
                               "[ \"$6\" = --job ] && [ \"$1\" -lt 2 ]",
                               2),
                    2);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 0);
}

TEST(LauncherTest, BenignExitIsReturnedWithoutStoppingOthers) {
  absl::StatusOr<int> status = RunLocalRanks(
      ShellRanks("if [ \"$1\" = 1 ]; then exit 2; fi; sleep 0.2", 3), 2);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 2);
}

// The spec's variables reach every rank, over this process's.
TEST(LauncherTest, RanksGetTheSpecsEnvironment) {
  setenv("GRADSYNC_LAUNCHER_TEST", "outer", 1);
  LaunchSpec spec = ShellRanks(
      "[ \"$GRADSYNC_LAUNCHER_TEST\" = inner ] && [ -n \"$PATH\" ]", 2);
  spec.env = {"GRADSYNC_LAUNCHER_TEST=inner"};
  absl::StatusOr<int> status = RunLocalRanks(spec, 2);
  unsetenv("GRADSYNC_LAUNCHER_TEST");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 0);
}

// What bench's launcher relies on: ranks that all exit with the benign
// status (wrong elements) ran to the end; none is stopped or blamed.
TEST(LauncherTest, EveryRankBenign_ReturnsItWithoutAnError) {
  absl::StatusOr<int> status = RunLocalRanks(ShellRanks("exit 3", 3), 3);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 3);
}

TEST(LauncherTest, FailingRank_StopsTheOthersAndIsNamed) {
  const absl::Time start = absl::Now();
  absl::StatusOr<int> status = RunLocalRanks(
      ShellRanks("if [ \"$1\" = 1 ]; then exit 3; fi; exec sleep 60", 3), 2);
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(status.status().message()),
              HasSubstr("rank 1 of 3 exited with status 3; stopped ranks 0,2"));
}

TEST(LauncherTest, KilledRank_IsNamedWithItsSignal) {
  absl::StatusOr<int> status = RunLocalRanks(
      ShellRanks("if [ \"$1\" = 0 ]; then kill -9 $$; fi; exec sleep 60", 2),
      2);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.status().message()),
              HasSubstr("rank 0 of 2 was killed by signal 9"));
}

TEST(LauncherTest, Deadline_StopsEveryRankAndNamesThem) {
  LaunchSpec spec = ShellRanks("exec sleep 60", 2);
  spec.deadline = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<int> status = RunLocalRanks(spec, 2);
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(status.status().message()),
              HasSubstr("ranks 0,1 still running"));
}

TEST(LauncherTest, MissingBinary_FailsNamingTheRank) {
  LaunchSpec spec = ShellRanks("", 1);
  spec.executable = "/nonexistent/gradsync";
  absl::StatusOr<int> status = RunLocalRanks(spec, 2);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.status().message()),
              HasSubstr("rank 0 of 1 exited with status 127"));
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
