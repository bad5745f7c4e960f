// The one command-line flags library of every gradsync binary (the CLI and
// its subcommands, gradsync-worker, -coordinator, -ps, -store, -ps-bench).
// A command's flags are a table of FlagSpec rows, each with a setter that
// parses its value into the command's own options struct; parsing is a
// pure function of the arguments (and of the environment lookup it is
// given), so commands are testable and no flag is a global.
//
//   std::string coordinator;
//   bool json = false, help = false, version = false;
//   std::vector<FlagSpec> flags = {
//       StringFlag("coordinator", "HOST:PORT", "the coordinator",
//                  &coordinator).Env("GRADSYNC_COORDINATOR"),
//       SwitchFlag("json", "machine-readable output", &json),
//       HelpFlag(&help), VersionFlag(&version)};
//   ASSIGN_OR_RETURN(std::vector<std::string> positional,
//                    ParseFlags(args, flags));
//   if (help) std::cout << FlagsHelp(flags, TerminalWidth());
//
// Syntax: long flags "--name VALUE" or "--name=VALUE"; in long names '-' and
// '_' are the same letter, so "--tcp-congestion" and "--tcp_congestion" are
// one flag. A row may also have a one-letter name: "-b 1M", "-b1M",
// "-b=1M". Switches take no value. "--" ends the flags; other arguments are
// positional. -h is --help wherever the table has a help row.
//
// Environment: a row with env set takes that variable's value when the
// flag is not on the command line (an empty variable counts as unset).
//
// Sizes: one rule everywhere, binary units, K = 1024: "4096", "64K",
// "1M", "2G", "1T", optionally followed by B or iB ("64KiB", "1GB" = 2^30).
// Counts (of elements, steps) are decimal: "25M" is 25,000,000.
//
// Errors: INVALID_ARGUMENT naming the flag and what it accepts.
// Threading: pure functions; a table may be parsed on any thread.
#ifndef GRADSYNC_COMMON_FLAGS_H_
#define GRADSYNC_COMMON_FLAGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {

struct FlagSpec {
  FlagSpec() = default;
  FlagSpec(std::string name, std::string value_name, std::string help,
           std::function<absl::Status(absl::string_view value)> set)
      : name(std::move(name)),
        value_name(std::move(value_name)),
        help(std::move(help)),
        set(std::move(set)) {}

  std::string name;        // long name, without "--"
  std::string value_name;  // empty: a switch that takes no value
  std::string help;
  // Parses the value (empty for a switch) into the options it targets.
  std::function<absl::Status(absl::string_view value)> set;
  char short_name = 0;  // one-letter name ('b' for -b); 0: none
  std::string env;      // environment fallback; empty: none

  // The row with `variable` as its environment fallback (for chaining).
  FlagSpec Env(std::string variable) && {
    env = std::move(variable);
    return std::move(*this);
  }
  // The row with the one-letter name `letter` (for chaining).
  FlagSpec Short(char letter) && {
    short_name = letter;
    return std::move(*this);
  }
};

// Looks an environment variable up: its value, or nullopt when unset.
using EnvLookup =
    std::function<std::optional<std::string>(absl::string_view name)>;

// The process environment (getenv).
std::optional<std::string> ProcessEnv(absl::string_view name);

// Parses `args` (without the program name) against `flags`; returns the
// positional arguments in order. Rows with an env variable that the
// arguments leave unset are set from `env` first; a flag given twice keeps
// its last value. Unknown flags, a missing value, a value given to a
// switch, and a value its row refuses are INVALID_ARGUMENT; parsing stops
// at the first error.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ParseFlags(
    const std::vector<std::string>& args, const std::vector<FlagSpec>& flags,
    const EnvLookup& env = ProcessEnv);

// The same over main()'s argc/argv (argv[0], the program, is skipped).
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ParseFlags(
    int argc, char** argv, const std::vector<FlagSpec>& flags,
    const EnvLookup& env = ProcessEnv);

// The flags' help, one entry per row ("  -b, --minbytes SIZE  help"), the
// help text wrapped to `width` columns and aligned; an env fallback is
// named at the end of its row's text.
std::string FlagsHelp(const std::vector<FlagSpec>& flags, int width = 80);

// `text` wrapped at spaces to `width` columns, every line after the first
// indented by `indent` columns, the first continuing from column
// `column`; ends in a newline. (FlagsHelp's wrapping, for other help.)
std::string WrapHelpText(absl::string_view text, size_t column, size_t indent,
                         int width);

// The terminal's width, from what was found (a pure function, testable
// without a terminal): the columns of the terminal on stdout, else on
// stderr (0: not a terminal, or it did not say), else $COLUMNS (nullptr:
// unset; ignored unless a positive number), else 80.
int PickTerminalWidth(int stdout_columns, int stderr_columns,
                      const char* columns_env);

// The width of this process's terminal: PickTerminalWidth over
// ioctl(TIOCGWINSZ) on stdout and stderr and $COLUMNS. Help text wraps to
// it (FlagsHelp never narrower than 40); the progress line fits in it.
int TerminalWidth();

// "<program> <version> (wire version <N>)": what every binary's --version
// prints (common/version.h, common/wire_version.h).
std::string VersionLine(absl::string_view program);

// ---- row factories; each writes through its pointer, which must outlive
// the parse ----

// --help (and -h).
FlagSpec HelpFlag(bool* out);
// --version.
FlagSpec VersionFlag(bool* out);
FlagSpec SwitchFlag(std::string name, std::string help, bool* out);
// A non-empty string.
FlagSpec StringFlag(std::string name, std::string value_name, std::string help,
                    std::string* out);
// Integers >= min.
FlagSpec IntFlag(std::string name, std::string help, int64_t min, int64_t* out);
FlagSpec IntFlag(std::string name, std::string help, int min, int* out);
// Seconds ("30", "2.5") or an absl duration ("90s", "2m"); > 0.
FlagSpec SecondsFlag(std::string name, std::string help, absl::Duration* out);
// Whole milliseconds > 0, as a duration.
FlagSpec MillisecondsFlag(std::string name, std::string help,
                          absl::Duration* out);
// A byte count (the size rule above) >= min.
FlagSpec SizeFlag(std::string name, std::string help, uint64_t min,
                  uint64_t* out);
// A finite number >= min, shown in the help as `value_name`.
FlagSpec DoubleFlag(std::string name, std::string value_name, std::string help,
                    double min, double* out);

// ---- value parsers shared by the tables (the flag name goes into the
// error) ----

[[nodiscard]] absl::StatusOr<int64_t> ParseIntValue(absl::string_view flag,
                                                    absl::string_view value,
                                                    int64_t min);
// An integer with an optional K, M or G suffix (powers of 1000), e.g. the
// element count "25M"; >= min.
[[nodiscard]] absl::StatusOr<int64_t> ParseCountValue(absl::string_view flag,
                                                      absl::string_view value,
                                                      int64_t min);
// A finite number >= min.
[[nodiscard]] absl::StatusOr<double> ParseDoubleValue(absl::string_view flag,
                                                      absl::string_view value,
                                                      double min);
[[nodiscard]] absl::StatusOr<absl::Duration> ParseSecondsValue(
    absl::string_view flag, absl::string_view value);
// A byte count (the size rule above) >= min.
[[nodiscard]] absl::StatusOr<uint64_t> ParseSizeValue(absl::string_view flag,
                                                      absl::string_view value,
                                                      uint64_t min);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_FLAGS_H_
