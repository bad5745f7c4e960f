// The flags library (common/flags.h): long and one-letter flags, '-' and
// '_' as one letter, environment fallbacks, generated help wrapped to a
// width, sizes with K = 1024, counts with K = 1000, --version.
#include "common/flags.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/did_you_mean.h"
#include "common/units.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// An environment holding `vars` only.
EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ParseFlagsTest, ValuesSwitchesAndPositionals) {
  std::string name;
  bool json = false;
  int64_t steps = 0;
  std::vector<FlagSpec> flags = {StringFlag("name", "N", "", &name),
                                 SwitchFlag("json", "", &json),
                                 IntFlag("steps", "", 1, &steps)};
  absl::StatusOr<std::vector<std::string>> positional =
      ParseFlags({"job-1", "--name", "a", "--json", "--steps=7", "x"}, flags);
  ASSERT_TRUE(positional.ok()) << positional.status();
  EXPECT_THAT(*positional, ElementsAre("job-1", "x"));
  EXPECT_EQ(name, "a");
  EXPECT_TRUE(json);
  EXPECT_EQ(steps, 7);
}

TEST(ParseFlagsTest, Errors_NameTheFlag) {
  bool json = false;
  int64_t steps = 0;
  std::vector<FlagSpec> flags = {SwitchFlag("json", "", &json),
                                 IntFlag("steps", "", 1, &steps)};
  EXPECT_THAT(std::string(ParseFlags({"--nope"}, flags).status().message()),
              HasSubstr("unknown flag '--nope'"));
  EXPECT_THAT(std::string(ParseFlags({"--steps"}, flags).status().message()),
              HasSubstr("--steps needs a value"));
  EXPECT_THAT(
      std::string(ParseFlags({"--steps", "0"}, flags).status().message()),
      HasSubstr("--steps wants an integer >= 1, got '0'"));
  EXPECT_THAT(std::string(ParseFlags({"--json=1"}, flags).status().message()),
              HasSubstr("--json takes no value"));
  EXPECT_EQ(ParseFlags({"-x"}, flags).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseFlagsTest, UnknownFlag_SuggestsTheNearestKnownOne) {
  bool json = false;
  int64_t workers = 0;
  std::vector<FlagSpec> flags = {SwitchFlag("json", "", &json),
                                 IntFlag("workers", "", 1, &workers)};
  EXPECT_THAT(ParseFlags({"--workres", "2"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown flag '--workres'; did you mean "
                                 "'--workers'?")));
  EXPECT_THAT(ParseFlags({"--jsno"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean '--json'?")));
  EXPECT_THAT(std::string(ParseFlags({"--steps"}, flags).status().message()),
              Not(HasSubstr("did you mean")));
  EXPECT_EQ(workers, 0);  // nothing was set
}

TEST(ClosestNameTest, NearNamesOnly) {
  const std::vector<std::string> names = {"submit", "status", "switch",
                                          "cancel", "up"};
  EXPECT_EQ(ClosestName("sumbit", names), "submit");
  EXPECT_EQ(ClosestName("STATUS_", names), "status");
  EXPECT_EQ(ClosestName("cancle", names), "cancel");
  EXPECT_EQ(ClosestName("switch", names), std::nullopt);  // known already
  EXPECT_EQ(ClosestName("benchmark", names), std::nullopt);
  EXPECT_EQ(ClosestName("u", names), std::nullopt);  // as long as the edit
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("max_threads", "MAX-THREADS"), 0u);
}

TEST(ParseFlagsTest, DoubleDashEndsFlags) {
  bool json = false;
  absl::StatusOr<std::vector<std::string>> positional =
      ParseFlags({"--", "--json"}, {SwitchFlag("json", "", &json)});
  ASSERT_TRUE(positional.ok());
  EXPECT_THAT(*positional, ElementsAre("--json"));
  EXPECT_FALSE(json);
}

TEST(ParseFlagsTest, CountsTakeSuffixes) {
  EXPECT_EQ(*ParseCountValue("--f", "25M", 1), 25000000);
  EXPECT_EQ(*ParseCountValue("--f", "4k", 1), 4000);
  EXPECT_EQ(*ParseCountValue("--f", "17", 1), 17);
  EXPECT_FALSE(ParseCountValue("--f", "1.5M", 1).ok());
  EXPECT_FALSE(ParseCountValue("--f", "0", 1).ok());
  EXPECT_FALSE(ParseCountValue("--f", "99999999999999G", 1).ok());
}

TEST(ParseFlagsTest, DashAndUnderscoreAreOneLetter) {
  std::string congestion;
  std::vector<FlagSpec> flags = {
      StringFlag("tcp-congestion", "NAME", "", &congestion)};
  ASSERT_THAT(ParseFlags({"--tcp_congestion", "reno"}, flags), IsOk());
  EXPECT_EQ(congestion, "reno");
  ASSERT_THAT(ParseFlags({"--tcp-congestion=cubic"}, flags), IsOk());
  EXPECT_EQ(congestion, "cubic");
}

TEST(ParseFlagsTest, LettersTakeTheirValueAttachedOrNext) {
  uint64_t min_bytes = 0;
  int64_t iters = 0;
  std::vector<FlagSpec> flags = {
      SizeFlag("minbytes", "", 0, &min_bytes).Short('b'),
      IntFlag("iters", "", 1, &iters).Short('n')};
  ASSERT_THAT(ParseFlags({"-b", "1M", "-n5"}, flags), IsOk());
  EXPECT_EQ(min_bytes, uint64_t{1} << 20);
  EXPECT_EQ(iters, 5);
  ASSERT_THAT(ParseFlags({"-b=2K"}, flags), IsOk());
  EXPECT_EQ(min_bytes, 2048u);
  EXPECT_THAT(ParseFlags({"-q"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown flag '-q'")));
  EXPECT_THAT(ParseFlags({"-b"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("-b needs a value (SIZE)")));
}

TEST(ParseFlagsTest, HelpAnswersToDashH) {
  bool help = false;
  ASSERT_THAT(ParseFlags({"-h"}, {HelpFlag(&help)}), IsOk());
  EXPECT_TRUE(help);
}

TEST(ParseFlagsTest, Environment_FillsFlagsTheCommandLineLeavesUnset) {
  std::string coordinator;
  const std::vector<FlagSpec> flags = {
      StringFlag("coordinator", "HOST:PORT", "", &coordinator)
          .Env("GRADSYNC_COORDINATOR")};
  ASSERT_THAT(ParseFlags({}, flags, Env({{"GRADSYNC_COORDINATOR", "a:1"}})),
              IsOk());
  EXPECT_EQ(coordinator, "a:1");
  // The command line wins; an empty variable counts as unset.
  ASSERT_THAT(ParseFlags({"--coordinator", "b:2"}, flags,
                         Env({{"GRADSYNC_COORDINATOR", "a:1"}})),
              IsOk());
  EXPECT_EQ(coordinator, "b:2");
  coordinator = "default";
  ASSERT_THAT(ParseFlags({}, flags, Env({{"GRADSYNC_COORDINATOR", ""}})),
              IsOk());
  EXPECT_EQ(coordinator, "default");
  // No lookup: the environment is not read.
  ASSERT_THAT(ParseFlags({}, flags, nullptr), IsOk());
  EXPECT_EQ(coordinator, "default");
}

TEST(ParseFlagsTest, BadEnvironmentValue_NamesTheVariableAndTheFlag) {
  int64_t steps = 0;
  const std::vector<FlagSpec> flags = {
      IntFlag("steps", "", 1, &steps).Env("STEPS")};
  EXPECT_THAT(ParseFlags({}, flags, Env({{"STEPS", "zero"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("$STEPS (for --steps): --steps wants an "
                                 "integer >= 1, got 'zero'")));
}

TEST(ParseFlagsTest, SizesAreBinaryCountsAreDecimal) {
  uint64_t bytes = 0;
  const std::vector<FlagSpec> flags = {SizeFlag("bytes", "", 1, &bytes)};
  ASSERT_THAT(ParseFlags({"--bytes", "64K"}, flags), IsOk());
  EXPECT_EQ(bytes, 65536u);
  ASSERT_THAT(ParseFlags({"--bytes=1GiB"}, flags), IsOk());
  EXPECT_EQ(bytes, uint64_t{1} << 30);
  EXPECT_THAT(ParseFlags({"--bytes", "0"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--bytes wants a size >= 1 B, got '0'")));
  EXPECT_THAT(ParseFlags({"--bytes", "1X"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--bytes: size '1X' has an unknown suffix")));
  EXPECT_EQ(*ParseCountValue("--count", "64K", 1), 64000);
}

TEST(ParseFlagsTest, IntAndMilliseconds_RefuseWhatDoesNotFit) {
  int threads = 0;
  absl::Duration lease;
  const std::vector<FlagSpec> flags = {
      IntFlag("threads", "", 0, &threads),
      MillisecondsFlag("lease-ms", "", &lease)};
  ASSERT_THAT(ParseFlags({"--threads", "3", "--lease-ms", "250"}, flags),
              IsOk());
  EXPECT_EQ(threads, 3);
  EXPECT_EQ(lease, absl::Milliseconds(250));
  EXPECT_THAT(ParseFlags({"--threads", "99999999999"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--threads wants an integer up to")));
  EXPECT_THAT(ParseFlags({"--lease-ms", "0"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--lease-ms '0' is not a positive number "
                                 "of milliseconds")));
}

TEST(FlagsHelpTest, AlignsNamesAndWrapsTextToTheWidth) {
  bool json = false;
  std::string coordinator;
  uint64_t bytes = 0;
  const std::vector<FlagSpec> flags = {
      SwitchFlag("json", "machine-readable output", &json),
      StringFlag("coordinator", "HOST:PORT",
                 "the coordinator to talk to, reached over gRPC on the "
                 "address given here",
                 &coordinator)
          .Env("GRADSYNC_COORDINATOR"),
      SizeFlag("minbytes", "smallest size", 0, &bytes).Short('b')};
  const std::string help = FlagsHelp(flags, 60);
  EXPECT_THAT(help, HasSubstr("      --json                machine-readable "
                              "output\n"));
  EXPECT_THAT(help, HasSubstr("  -b, --minbytes SIZE       smallest size\n"));
  EXPECT_THAT(help, HasSubstr("[$GRADSYNC_COORDINATOR]"));
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    EXPECT_LE(line.size(), 60u) << line;
  }
  // Wider: the same text on fewer lines.
  const std::string wide = FlagsHelp(flags, 200);
  EXPECT_LT(std::count(wide.begin(), wide.end(), '\n'),
            std::count(help.begin(), help.end(), '\n'));
}

TEST(VersionTest, NamesTheProgramTheVersionAndTheWireVersion) {
  const std::string line = VersionLine("gradsync-worker");
  EXPECT_THAT(line, HasSubstr("gradsync-worker "));
  EXPECT_THAT(line,
              HasSubstr(absl::StrCat("(wire version ", kWireVersion, ")")));
  EXPECT_THAT(line, Not(HasSubstr("  ")));
  bool version = false;
  ASSERT_THAT(ParseFlags({"--version"}, {VersionFlag(&version)}), IsOk());
  EXPECT_TRUE(version);
}

// The terminal on stdout, else on stderr, else $COLUMNS, else 80.
TEST(TerminalWidthTest, PickTerminalWidth_TerminalThenColumnsThen80) {
  EXPECT_EQ(PickTerminalWidth(132, 100, "90"), 132);
  EXPECT_EQ(PickTerminalWidth(0, 100, "90"), 100);
  EXPECT_EQ(PickTerminalWidth(0, 0, "90"), 90);
  EXPECT_EQ(PickTerminalWidth(0, 0, "30"), 30);
  EXPECT_EQ(PickTerminalWidth(0, 0, nullptr), 80);
  EXPECT_EQ(PickTerminalWidth(0, 0, "wide"), 80);
  EXPECT_EQ(PickTerminalWidth(0, 0, "-5"), 80);
  EXPECT_EQ(PickTerminalWidth(0, 0, ""), 80);
  EXPECT_GE(TerminalWidth(), 1);
}

TEST(WrapHelpTextTest, WrapsAtSpacesAndIndents) {
  // From column 4, 30 wide: 26 columns on the first line, 28 after.
  EXPECT_EQ(
      WrapHelpText("alpha beta gamma delta epsilon zeta eta theta", 4, 2, 30),
      "alpha beta gamma delta\n  epsilon zeta eta theta\n");
  EXPECT_EQ(WrapHelpText("short", 0, 0, 80), "short\n");
}

// "-workers" (one dash) names the long flag it meant; a near letter-less
// word gets the nearest long name.
TEST(ParseFlagsTest, LongNameAfterOneDash_SuggestsTheLongFlag) {
  int64_t workers = 0;
  bool json = false;
  std::vector<FlagSpec> flags = {IntFlag("workers", "", 1, &workers),
                                 SwitchFlag("json", "", &json)};
  EXPECT_THAT(ParseFlags({"-workers", "2"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown flag '-workers'; did you mean '--workers'?"));
  EXPECT_THAT(ParseFlags({"-jsno"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown flag '-jsno'; did you mean '--json'?"));
  EXPECT_THAT(ParseFlags({"-x"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown flag '-x' (flags are --long-names)"));
  // A letter row takes a glued value: "-w2" is -w 2, not a typo; but
  // "-workers" is still the long name, not -w "orkers".
  flags[0].short_name = 'w';
  EXPECT_THAT(ParseFlags({"-w2"}, flags), IsOk());
  EXPECT_EQ(workers, 2);
  EXPECT_THAT(ParseFlags({"-workers", "3"}, flags),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown flag '-workers'; did you mean '--workers'?"));
  EXPECT_EQ(workers, 2);
}

}  // namespace
}  // namespace gradsync
