// `gradsync submit --entrypoint "..."`: the command line split as a shell
// would, and the entrypoint spec the flags build.
#include "cli/control/shell_words.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "cli/control/job_spec_builder.h"
#include "common/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace control {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SplitShellWordsTest, SplitsAndUnquotesAsAShellWould) {
  EXPECT_THAT(*SplitShellWords("python3 train.py --epochs 3"),
              ElementsAre("python3", "train.py", "--epochs", "3"));
  EXPECT_THAT(*SplitShellWords("  a\t 'b c'  \"d \\\"e\\\" $f\" g\\ h "),
              ElementsAre("a", "b c", "d \"e\" $f", "g h"));
  EXPECT_THAT(*SplitShellWords("x'y'\"z\""), ElementsAre("xyz"));
  EXPECT_THAT(*SplitShellWords("''"), ElementsAre(""));
  EXPECT_THAT(*SplitShellWords("'a\\b'"), ElementsAre("a\\b"));
}

TEST(SplitShellWordsTest, BadQuotingOrNothing_InvalidArgument) {
  for (const char* bad : {"'open", "\"open", "trailing\\", "", "   "}) {
    EXPECT_EQ(SplitShellWords(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

[[nodiscard]] absl::StatusOr<JobSpec> Build(
    const std::vector<std::string>& args) {
  JobSpecFlags spec_flags;
  std::vector<FlagSpec> flags;
  AddJobSpecFlags(&spec_flags, &flags);
  absl::StatusOr<std::vector<std::string>> positional = ParseFlags(args, flags);
  if (!positional.ok()) return positional.status();
  return BuildJobSpec(spec_flags);
}

TEST(EntrypointFlagsTest, EntrypointWorkdirAndDeadline) {
  absl::StatusOr<JobSpec> spec =
      Build({"--entrypoint", "python3 'my train.py' --lr 0.1", "--workdir",
             "/srv/run", "--workers", "4", "--step-deadline-s", "30"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().kind(), "entrypoint");
  EXPECT_THAT(spec->model().entrypoint().argv(),
              ElementsAre("python3", "my train.py", "--lr", "0.1"));
  EXPECT_EQ(spec->model().entrypoint().workdir(), "/srv/run");
  EXPECT_EQ(spec->model().entrypoint().step_deadline_ms(), 30000);
  EXPECT_EQ(spec->num_workers(), 4);
  EXPECT_EQ(spec->name(), "python3 my train.py");
  // A built-in model's defaults stay out of it.
  EXPECT_TRUE(spec->dataset().name().empty());
  EXPECT_TRUE(spec->model().layer_sizes().empty());
  EXPECT_EQ(spec->batch_size(), 0);
  EXPECT_TRUE(spec->optimizer().name().empty());
}

TEST(EntrypointFlagsTest, WorkdirDefaultsToTheCurrentOneAndIsMadeAbsolute) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  absl::StatusOr<JobSpec> spec = Build({"--entrypoint", "python3 t.py"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().entrypoint().workdir(), cwd);
  spec = Build({"--entrypoint", "python3 t.py", "--workdir", "sub"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().entrypoint().workdir(), std::string(cwd) + "/sub");
  spec = Build({"--entrypoint", "python3 t.py", "--step-deadline-s", "-1"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().entrypoint().step_deadline_ms(), -1);
}

// The CLI refuses what the coordinator would: a name with a bidi override.
TEST(NameFlagTest, UnsafeCodePoint_RefusedBeforeSubmit) {
  absl::StatusOr<JobSpec> spec = Build({"--name",
                                        "run\xe2\x80\xae"
                                        "cba"});
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr("--name holds U+202E (a bidirectional control)"));
}

TEST(EntrypointFlagsTest, BadCommandLine_InvalidArgument) {
  EXPECT_THAT(Build({"--entrypoint", "python3 'oops"}).status().message(),
              HasSubstr("unterminated"));
}

}  // namespace
}  // namespace control
}  // namespace gradsync
