// The lab's run directory comes through CommandEnv ($GRADSYNC_LAB_DIR as
// main's adapter read it), so that a test gives a command its own without
// touching the process environment: --run-dir wins, then the env's, then
// ./.lab, relative ones from the env's working directory.
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/lab/lab_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace lab {
namespace {

using ::testing::HasSubstr;

cli::CommandEnv Env(std::ostringstream* out, std::ostringstream* err) {
  cli::CommandEnv env;
  env.out = out;
  env.err = err;
  env.cwd = "/work/here";
  return env;
}

TEST(LabDirTest, FlagThenCommandEnvThenDotLab) {
  std::ostringstream out, err;
  cli::CommandEnv env = Env(&out, &err);
  EXPECT_EQ(ResolveLabDir("", env), "/work/here/.lab");
  env.lab_dir_env = "/srv/lab/";
  EXPECT_EQ(ResolveLabDir("", env), "/srv/lab");
  EXPECT_EQ(ResolveLabDir("mine", env), "/work/here/mine");
  env.lab_dir_env = "rel";
  EXPECT_EQ(ResolveLabDir("", env), "/work/here/rel");
  EXPECT_EQ(ResolveLabDir("/abs", env), "/abs");
}

// `lab status` and `lab sweep` look for the lab where the env says, with
// no --run-dir and no GRADSYNC_LAB_DIR in this process.
TEST(LabDirTest, CommandsReadTheLabDirFromTheCommandEnv) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/gradsync_lab_dir_test/none");
  std::ostringstream out, err;
  cli::CommandEnv env = Env(&out, &err);
  env.lab_dir_env = dir;
  EXPECT_EQ(RunLab({"status"}, env), cli::kExitFailure);
  EXPECT_THAT(err.str(), HasSubstr(absl::StrCat("no lab in ", dir, ";")));
  err.str("");
  EXPECT_EQ(RunLab({"sweep", "--workers", "2"}, env), cli::kExitFailure);
  EXPECT_THAT(err.str(), HasSubstr(absl::StrCat("no lab in ", dir, ";")));
}

}  // namespace
}  // namespace lab
}  // namespace gradsync
