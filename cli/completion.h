// Shell completion for `gradsync`, generated from the flag tables the
// commands parse with (cli/commands.h), so that a new flag completes the
// day it exists: `gradsync completion bash` prints a script for
// `source <(gradsync completion bash)` or /etc/bash_completion.d, and
// `gradsync completion zsh` the same through zsh's bashcompinit.
//
// It completes the command names (first word), each command's flags (a
// word starting with '-'), the values of a flag whose value names its
// choices ("table|wide|json|csv" completes -o), the first positional
// word where a command has a fixed set (local up|down), the flags of a
// subcommand with a table of its own (lab sweep), and file names
// otherwise.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_CLI_COMPLETION_H_
#define GRADSYNC_CLI_COMPLETION_H_

#include <string>
#include <vector>

#include "common/flags.h"

namespace gradsync {
namespace cli {

struct CompletionCommand {
  std::string name;
  std::vector<FlagSpec> flags;     // read only: no setter is called
  std::vector<std::string> words;  // the first positional's choices
  // First positional words with flag tables of their own (lab sweep),
  // completed once that word is typed; their `words` are not used.
  std::vector<CompletionCommand> subcommands;
};

// The choices a flag's value name lists ("table|wide|json" -> table, wide,
// json); empty when it names no fixed set ("FILE", "N", "STEP:MODE").
std::vector<std::string> ValueChoices(const FlagSpec& flag);

// The bash script: one function, _gradsync, and its `complete` line.
std::string BashCompletion(const std::vector<CompletionCommand>& commands);

// The zsh script: #compdef, bashcompinit, then the bash script.
std::string ZshCompletion(const std::vector<CompletionCommand>& commands);

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_COMPLETION_H_
