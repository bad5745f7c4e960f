// SplitShellWords: a command line as a POSIX shell splits it into words,
// for `gradsync submit --entrypoint "python3 train.py --lr 0.1"`: blanks
// separate words; 'single quotes' keep everything; "double quotes" keep
// everything but \" \\ \$ \`; a backslash outside quotes keeps the next
// character. No expansion ($VAR, globs, ~) and no operators (|, ;, >):
// the worker runs the words directly, not through a shell.
//
// Errors: INVALID_ARGUMENT for an unterminated quote or a trailing
// backslash, or no words at all.
// Pure function; thread-safe.
#ifndef GRADSYNC_CLI_CONTROL_SHELL_WORDS_H_
#define GRADSYNC_CLI_CONTROL_SHELL_WORDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace cli {
namespace control {

[[nodiscard]] absl::StatusOr<std::vector<std::string>> SplitShellWords(
    absl::string_view line);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_SHELL_WORDS_H_
