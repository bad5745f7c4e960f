// Command-line flags of the control commands (submit, status, local up,
// ...): a table of FlagSpec rows, each with a setter that parses its value
// into the command's own options struct. Parsing is a pure function of the
// arguments, so that commands are testable and no flag is a global.
//
//   std::string job;
//   bool json = false;
//   std::vector<FlagSpec> flags = {
//       StringFlag("job", "ID", "the job", &job),
//       SwitchFlag("json", "machine-readable output", &json)};
//   ASSIGN_OR_RETURN(std::vector<std::string> positional,
//                    ParseFlags(args, flags));
//
// Flags are long ("--name"): the value follows as the next argument or
// after '=' ("--steps=100"); switches take no value. "--" ends the flags.
//
// Errors: INVALID_ARGUMENT naming the flag and what it accepts.
#ifndef GRADSYNC_CLI_CONTROL_FLAGS_H_
#define GRADSYNC_CLI_CONTROL_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {
namespace control {

struct FlagSpec {
  std::string name;        // without "--"
  std::string value_name;  // empty: a switch that takes no value
  std::string help;
  // Parses the value (empty for a switch) into the options it targets.
  std::function<absl::Status(absl::string_view value)> set;
};

// Parses `args` against `flags`; returns the positional arguments in order.
// Unknown flags, a missing value, and a value given to a switch are
// INVALID_ARGUMENT.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ParseFlags(
    const std::vector<std::string>& args, const std::vector<FlagSpec>& flags);

// One line per flag: "  --name VALUE   help".
std::string FlagsUsage(const std::vector<FlagSpec>& flags);

// ---- row factories; each writes through its pointer, which must outlive
// the parse ----

FlagSpec SwitchFlag(std::string name, std::string help, bool* out);
FlagSpec StringFlag(std::string name, std::string value_name, std::string help,
                    std::string* out);
// Integers >= min.
FlagSpec IntFlag(std::string name, std::string help, int64_t min, int64_t* out);
// Seconds ("30", "2.5") or an absl duration ("90s", "2m"); > 0.
FlagSpec SecondsFlag(std::string name, std::string help, absl::Duration* out);

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

}  // namespace control
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_FLAGS_H_
