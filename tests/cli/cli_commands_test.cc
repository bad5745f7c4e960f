// The `gradsync` command table: help CMD, "did you mean" for commands, the
// usage's width, one meaning per flag letter in every command, and the
// bash completion generated from the flag tables, run through bash itself.
#include <stdio.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/framework/command_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class GradsyncCommandsTest : public ::testing::Test {
 protected:
  int Run(const std::vector<std::string>& args, int width = 80) {
    out_.str("");
    err_.str("");
    CommandEnv env;
    env.out = &out_;
    env.err = &err_;
    env.terminal_width = width;
    env.coordinator_env = "127.0.0.1:1";
    return RunGradsync(args, env);
  }

  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(GradsyncCommandsTest, HelpCommand_IsTheCommandsHelp) {
  ASSERT_EQ(Run({"status", "--help"}), kExitOk);
  const std::string help = out_.str();
  EXPECT_THAT(help, StartsWith("usage: gradsync status [JOB] [flags]\n"));
  ASSERT_EQ(Run({"help", "status"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
  ASSERT_EQ(Run({"status", "-h"}), kExitOk);
  EXPECT_EQ(out_.str(), help);
}

TEST_F(GradsyncCommandsTest, UnknownCommand_DidYouMean) {
  EXPECT_EQ(Run({"stauts"}), kExitFailure);
  EXPECT_THAT(err_.str(), StartsWith("gradsync: unknown command 'stauts'; did "
                                     "you mean 'status'?\n\nusage: "));
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Run({"help", "wokers"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gradsync help: unknown command 'wokers'; did you mean "
            "'workers'?\n(gradsync --help lists the commands)\n");
  EXPECT_EQ(Run({"--jsno"}), kExitFailure);
  EXPECT_THAT(err_.str(), StartsWith("gradsync: unknown flag '--jsno' (flags "
                                     "come after the command)\n"));
}

TEST_F(GradsyncCommandsTest, Usage_FitsTheTerminal) {
  for (const int width : {50, 80, 120}) {
    ASSERT_EQ(Run({"--help"}, width), kExitOk);
    for (absl::string_view line : absl::StrSplit(out_.str(), '\n')) {
      EXPECT_LE(line.size(), static_cast<size_t>(width)) << line;
    }
  }
  ASSERT_EQ(Run({"help"}, 50), kExitOk);
  EXPECT_THAT(out_.str(),
              HasSubstr("  explain     a job's sync time against the\n"
                        "              alpha-beta model, its bottleneck,\n"
                        "              and the faster path\n"));
}

// No two rows of a command share a long name or a letter, and every
// command answers --help.
TEST_F(GradsyncCommandsTest, EveryCommand_FlagsAreUniqueAndHelpWorks) {
  for (const Command& command : Commands()) {
    std::set<std::string> names;
    std::set<char> letters;
    const std::vector<FlagSpec> flags = CommandFlags(command);
    EXPECT_FALSE(flags.empty()) << command.name;
    for (const FlagSpec& flag : flags) {
      EXPECT_TRUE(names.insert(flag.name).second)
          << command.name << " --" << flag.name;
      if (flag.short_name != 0) {
        EXPECT_TRUE(letters.insert(flag.short_name).second)
            << command.name << " -" << flag.short_name;
      }
    }
    EXPECT_EQ(letters.count('h'), 1u) << command.name << " has no -h";
    EXPECT_EQ(Run({command.name, "--help"}), kExitOk) << command.name;
    EXPECT_THAT(out_.str(), StartsWith("usage: gradsync ")) << command.name;
  }
}

// bench on the framework: its help through env.out, a bad flag or value
// exits 2 naming it (before any rank or server starts), as in every
// command.
TEST_F(GradsyncCommandsTest, Bench_HelpAndUsageErrorsAsEveryCommands) {
  ASSERT_EQ(Run({"bench", "--help"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(),
              StartsWith("usage: gradsync bench allreduce|reducescatter|"));
  EXPECT_THAT(out_.str(), HasSubstr("\nflags:\n  -b, --minbytes SIZE"));
  EXPECT_THAT(out_.str(), HasSubstr("1 wrong elements or an error, 2 a bad"));
  ASSERT_EQ(Run({"help", "bench"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("usage: gradsync bench "));

  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  const Bad cases[] = {
      {{"bench", "allreduce", "--bogus"}, "unknown flag '--bogus'"},
      {{"bench", "allreduce", "-n", "0"}, "--iters wants an integer >= 1"},
      {{"bench", "allreduce", "-b", "1X"}, "--minbytes: "},
      {{"bench", "allreduce", "--ranks", "4", "--host-layout", "3+2"},
       "--host-layout places 5 ranks, but the run has 4"},
      {{"bench"}, "name a collective"},
      {{"bench", "allreduce", "--algo", "tree"}, "tree"},
      {{"bench", "allreduce", "--transport", "ib"}, "unknown transport 'ib'"},
  };
  for (const Bad& bad : cases) {
    EXPECT_EQ(Run(bad.args), kExitUsage) << bad.message;
    EXPECT_THAT(err_.str(), StartsWith("gradsync bench: ")) << bad.message;
    EXPECT_THAT(err_.str(), HasSubstr(bad.message));
    EXPECT_EQ(out_.str(), "") << bad.message;
  }
  // Parse errors point at --help; with --json, also as JSON on stdout.
  EXPECT_EQ(Run({"bench", "allreduce", "--bogus"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("(gradsync bench --help lists the flags)"));
  EXPECT_EQ(Run({"bench", "allreduce", "--json", "-c", "2"}), kExitUsage);
  EXPECT_THAT(out_.str(), StartsWith("{\"error\":{\"code\":"
                                     "\"INVALID_ARGUMENT\""));
}

TEST_F(GradsyncCommandsTest, OutputFlag_OnTheCommandsThatActToo) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/gradsync_o_", getpid());
  // Checked before anything is done: no lab is looked for, none started.
  EXPECT_EQ(Run({"lab", "up", "-o", "csv", "--run-dir", dir}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gradsync lab up: -o csv is for lab status and lab probe; lab up "
            "prints table or json\n");
  EXPECT_EQ(Run({"lab", "status", "-o", "xml", "--run-dir", dir}), kExitUsage);
  EXPECT_THAT(err_.str(),
              HasSubstr("--output is 'xml'; use table, json or csv"));
  EXPECT_EQ(Run({"lab", "status", "-o", "json", "--run-dir", dir}),
            kExitFailure);
  EXPECT_THAT(out_.str(), StartsWith("{\"error\":{\"code\":\"NOT_FOUND\""));
  EXPECT_EQ(Run({"local", "up", "-o", "csv"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--output is 'csv'; use table or json"));
  EXPECT_EQ(Run({"certs", "init", dir, "--days", "99999", "-o", "json"}),
            kExitUsage);
  EXPECT_THAT(out_.str(), StartsWith("{\"error\":{\"code\":"
                                     "\"INVALID_ARGUMENT\""));
  EXPECT_NE(access(dir.c_str(), F_OK), 0) << "a refused command wrote " << dir;
}

// What bash completes for `words` (the last one being completed).
std::string Complete(const std::string& script_path,
                     const std::vector<std::string>& words) {
  std::string array;
  for (const std::string& word : words) {
    absl::StrAppend(&array, " '", word, "'");
  }
  const std::string command = absl::StrCat(
      "bash -c 'source \"$0\"; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); "
      "_gradsync; echo \"${COMPREPLY[*]}\"' ",
      script_path, array);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) {
    output.append(buffer, n);
  }
  const int status = pclose(pipe);
  return status == 0 ? output : absl::StrCat("exit ", status, ": ", output);
}

TEST_F(GradsyncCommandsTest, BashCompletion_CompletesCommandsFlagsAndValues) {
  ASSERT_EQ(Run({"completion", "bash"}), kExitOk) << err_.str();
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/gradsync_completion_", getpid());
  std::ofstream(path) << out_.str();
  ASSERT_EQ(system(absl::StrCat("bash -n ", path).c_str()), 0);
  EXPECT_EQ(Complete(path, {"gradsync", "sta"}), "status\n");
  EXPECT_EQ(Complete(path, {"gradsync", "status", "-o", ""}),
            "table wide json csv\n");
  EXPECT_EQ(Complete(path, {"gradsync", "metrics", "j-1", "--output", "t"}),
            "table trace\n");
  EXPECT_EQ(Complete(path, {"gradsync", "metrics", "--form"}), "--format\n");
  EXPECT_EQ(Complete(path, {"gradsync", "submit", "--fol"}), "--follow\n");
  EXPECT_EQ(Complete(path, {"gradsync", "submit", "--mode", ""}),
            "ring ps auto\n");
  EXPECT_EQ(Complete(path, {"gradsync", "local", ""}), "up down\n");
  EXPECT_EQ(Complete(path, {"gradsync", "help", "me"}), "metrics\n");
  EXPECT_EQ(Complete(path, {"gradsync", "completion", "z"}), "zsh\n");
  // lab sweep takes flags of its own; lab up takes lab's.
  EXPECT_EQ(Complete(path, {"gradsync", "lab", "sw"}), "sweep\n");
  EXPECT_EQ(Complete(path, {"gradsync", "lab", "sweep", "--layo"}),
            "--layouts\n");
  EXPECT_EQ(Complete(path, {"gradsync", "lab", "up", "--layo"}), "\n");
  EXPECT_EQ(Complete(path, {"gradsync", "lab", "up", "--colo"}),
            "--colocate-ps\n");
  EXPECT_EQ(Complete(path, {"gradsync", "lab", "status", "-o", ""}),
            "table json csv\n");
  // A value with no fixed set: nothing, so that bash offers file names.
  EXPECT_EQ(Complete(path, {"gradsync", "submit", "--file", "x"}), "\n");
  unlink(path.c_str());
}

TEST_F(GradsyncCommandsTest, Completion_ZshAndBadShell) {
  ASSERT_EQ(Run({"completion", "zsh"}), kExitOk);
  EXPECT_THAT(out_.str(),
              StartsWith("#compdef gradsync\n# zsh completion for gradsync"));
  EXPECT_THAT(out_.str(),
              HasSubstr("autoload -U +X bashcompinit && bashcompinit\n"));
  EXPECT_EQ(Run({"completion", "fish"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gradsync completion: the shell is 'fish'; use bash or zsh\n"
            "(gradsync completion --help lists the flags)\n");
}

TEST(CompletionTest, ValueChoices_OnlyForAFixedSet) {
  FlagSpec flag;
  flag.value_name = "table|wide|json";
  EXPECT_THAT(ValueChoices(flag),
              ::testing::ElementsAre("table", "wide", "json"));
  flag.value_name = "FILE";
  EXPECT_TRUE(ValueChoices(flag).empty());
  flag.value_name = "STEP:MODE";
  EXPECT_TRUE(ValueChoices(flag).empty());
  flag.value_name = "A|B";  // placeholders, not values
  EXPECT_TRUE(ValueChoices(flag).empty());
}

}  // namespace
}  // namespace cli
}  // namespace gradsync
