// Parsing a command's line (CLI framework): the command's own flag table
// (common/flags.h) followed by the rows every command takes, -o/--output
// (output_format.h) where it prints more than one format and -h/--help;
// the help printed from that same table; and the positional-argument
// checks. Every error is a usage error: reported on env.err naming the
// flag or argument, exit status kExitUsage (command_env.h).
//
//   CommandOptions options;          // formats: table, json
//   std::vector<std::string> positional;
//   if (std::optional<int> done = ParseCommand(
//           args, {IntFlag("steps", "...", 1, &steps)}, "mycmd", kUsage,
//           env, &options, &positional)) {
//     return *done;                  // --help printed, or a usage error
//   }
//
// Commands that talk to the coordinator add its flags first
// (cli/control/command_common.h). Threading: as CommandEnv's.
#ifndef GRADSYNC_CLI_FRAMEWORK_PARSE_COMMAND_H_
#define GRADSYNC_CLI_FRAMEWORK_PARSE_COMMAND_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/framework/command_env.h"
#include "common/flags.h"

namespace gradsync {
namespace cli {

// The rows ParseCommand adds after the command's own.
struct CommandOptions {
  // What the command can print (output_format.h), the first the default;
  // set before ParseCommand. -o/--output (and --format, --json) pick one.
  // Empty: the command takes no -o (bench, whose -o is nccl-tests' --op).
  std::vector<std::string> formats = {"table", "json"};
  std::string output;  // empty until parsed: formats.front()
  bool json = false;   // output == "json", set by ParseCommand
  bool help = false;
};

// Parses `args` with the command's own `flags` followed by -o/--output
// (when options->formats is not empty) and -h/--help, into `options`;
// returns the exit status when the command is done already (--help
// printed `usage`, "flags:" and the table on env.out; a bad command line
// reported; env.flag_table filled), nullopt to go on. The environment
// reaches commands through CommandEnv, never through a row's env.
std::optional<int> ParseCommand(const std::vector<std::string>& args,
                                std::vector<FlagSpec> flags,
                                absl::string_view command,
                                absl::string_view usage, const CommandEnv& env,
                                CommandOptions* options,
                                std::vector<std::string>* positional);

// Checks that exactly `want` positional arguments (named `what`) came;
// otherwise reports the usage error and returns its exit status.
std::optional<int> ExpectPositional(const std::vector<std::string>& args,
                                    const std::vector<std::string>& positional,
                                    size_t want, absl::string_view what,
                                    absl::string_view command,
                                    const CommandEnv& env);

// Gives the row named `name` the one-letter name `letter` (-w for
// --workers, -n for --steps, -f for --follow: the same letter means the
// same thing in every control command).
void SetShortName(absl::string_view name, char letter,
                  std::vector<FlagSpec>* flags);

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_FRAMEWORK_PARSE_COMMAND_H_
