// `gradsync submit --entrypoint "..."`: the command line split as a shell
// would (the flags' spec: job_spec_builder_test.cc).
#include "cli/control/shell_words.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using ::testing::ElementsAre;

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

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
