// The `gradsync` command line: the table of commands (one row each: its
// name, summary, Run function and what its first positional argument may
// be) and the dispatch over it that main() calls, with `help CMD`,
// `--version`, "did you mean" for a mistyped command, `completion
// bash|zsh` generated from the commands' own flag tables, and the usage
// wrapped to the terminal.
//
// Threading: one call at a time (commands print to env's streams).
#ifndef GRADSYNC_CLI_COMMANDS_H_
#define GRADSYNC_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "cli/framework/command_env.h"
#include "common/flags.h"

namespace gradsync {
namespace cli {

struct Command {
  const char* name;
  const char* summary;
  // Gets the arguments after the command's name; returns the exit status.
  CommandFn run;
  // The first positional argument's choices, space-separated ("up down");
  // "" for none (completion offers file names).
  const char* words;
  // Words of `words` that take flags of their own, space-separated ("sweep
  // report"): `run` describes each with the word as its argument.
  const char* subcommands = "";
};

// Every command, in the order `gradsync --help` lists them.
absl::Span<const Command> Commands();

// The command's flag table, as its parser holds it (read only).
std::vector<FlagSpec> CommandFlags(const Command& command);

// The top-level usage, wrapped to `width` columns.
std::string Usage(int width);

// `gradsync ARGS...` (without the program name): the exit status.
int RunGradsync(const std::vector<std::string>& args, const CommandEnv& env);

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_COMMANDS_H_
