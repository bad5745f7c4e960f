// CommandEnv: what a control command reads from its process (output
// streams, whether stdout is a terminal, the environment variables it
// honours, the clock), gathered once by main's adapters and passed in, so
// that tests run commands in-process with their own streams and variables.
//
// Exit statuses of every control command:
//   0  done (for submit --follow / watch: the job SUCCEEDED)
//   1  a runtime error (coordinator unreachable, unknown job, a daemon that
//      would not start) or, when following, a FAILED or CANCELLED job
//   2  bad input: a flag, a job spec file, or a spec the coordinator
//      rejected as INVALID_ARGUMENT
#ifndef GRADSYNC_CLI_CONTROL_COMMAND_ENV_H_
#define GRADSYNC_CLI_CONTROL_COMMAND_ENV_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "common/tls.h"

namespace gradsync {
namespace cli {
namespace control {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct CommandEnv {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool out_is_tty = false;
  int terminal_width = 80;      // --help wraps to it
  std::string coordinator_env;  // $GRADSYNC_COORDINATOR
  std::string run_dir_env;      // $GRADSYNC_RUN_DIR
  std::string token_file_env;   // $GRADSYNC_TOKEN_FILE
  std::string tls_dir_env;      // $GRADSYNC_TLS_DIR
  std::string lab_dir_env;      // $GRADSYNC_LAB_DIR (the lab's run directory)
  std::string path_env;         // $PATH
  std::string self_exe;         // this binary (from /proc/self/exe)
  std::string cwd;              // the working directory
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // The terminal's width now (it may be resized while a job is followed);
  // unset: terminal_width.
  std::function<int()> live_width;
  // Set by DescribeFlags: the command stores its flag table here and
  // returns kExitOk without doing anything (shell completion and help
  // read the very table the command parses with).
  std::vector<FlagSpec>* flag_table = nullptr;
};

// The flag table of a command: `run` called with an env whose flag_table
// receives it (setters point at `run`'s locals: read the rows, never call
// their set). `args` pick a subcommand's table (DescribeFlags(&RunLab,
// {"sweep"})).
std::vector<FlagSpec> DescribeFlags(
    int (*run)(const std::vector<std::string>& args, const CommandEnv& env),
    const std::vector<std::string>& args = {});

// The environment of this process: std::cout/std::cerr, isatty(1), the
// variables above.
CommandEnv ProcessCommandEnv();

// Flags every command that talks to the coordinator takes.
struct CommonOptions {
  std::string coordinator;  // --coordinator; empty: env, then the default
  std::string token_file;   // --token-file; empty: env, then the local one
  // --tls-dir (empty: env, then the local cluster's) and --insecure.
  TlsOptions tls;
  absl::Duration timeout = absl::Seconds(10);  // per call
  // What the command can print (output_format.h), the first the default;
  // set before ParseCommand. -o/--output (and --format, --json) pick one.
  std::vector<std::string> formats = {"table", "json"};
  std::string output;  // empty until parsed: formats.front()
  bool json = false;   // output == "json", set by ParseCommand
  bool help = false;
};

// Appends -c/--coordinator, --token-file, --tls-dir, --insecure,
// --timeout, -o/--output (with its old spellings --format and --json, for
// `formats`) and -h/--help rows.
void AddCommonFlags(CommonOptions* options, std::vector<FlagSpec>* flags);

// Prints "gradsync <command>: <message>" on env.err (and, with json, the
// error as JSON on env.out); returns the exit status for `status`:
// kExitUsage for INVALID_ARGUMENT, else kExitFailure.
int ReportError(const CommandEnv& env, absl::string_view command, bool json,
                const absl::Status& status);

// For a bad command line: the message and a pointer to --help on env.err
// (and the error as JSON on env.out when `args` ask for JSON); kExitUsage.
int ReportUsageError(const CommandEnv& env, absl::string_view command,
                     const std::vector<std::string>& args,
                     const absl::Status& status);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_COMMAND_ENV_H_
