// The CLI framework (cli/framework/, namespace gradsync::cli): what every
// `gradsync` command is run with and how it ends. The rooms of commands
// build on it and the framework includes none of them
// (scripts/check_layering.sh): cli/bench, cli/control and cli/plan nest
// their namespaces in gradsync::cli and see it unqualified; cli/lab keeps
// gradsync::lab, the package of its records (proto/lab.proto), and names
// it cli::.
//
// CommandEnv: what a command reads from its process (output streams,
// whether stdout is a terminal, the environment variables it honours, the
// clock), gathered once by main's adapter (ProcessCommandEnv) and passed
// in, so that tests run commands in-process with their own streams and
// variables.
//
// Exit statuses, one meaning in every command:
//   0  done: the command did what it was asked (submit --follow and watch:
//      the job SUCCEEDED; bench: every element right)
//   1  a failure: a runtime error (coordinator unreachable, unknown job, a
//      daemon that would not start, a rank that died), a FAILED or
//      CANCELLED job when following it, or a check that failed (bench's
//      wrong elements, links' slow link)
//   2  bad input: a flag or its value, a missing or extra argument, a job
//      spec file, or a spec the coordinator rejected as INVALID_ARGUMENT
//
// Threading: a CommandEnv is read only while a command runs; one command
// at a time per env (they print to its streams).
#ifndef GRADSYNC_CLI_FRAMEWORK_COMMAND_ENV_H_
#define GRADSYNC_CLI_FRAMEWORK_COMMAND_ENV_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/flags.h"

namespace gradsync {
namespace cli {

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
  // The variables by which a launcher tells a process its rank and world
  // size, for `bench` with --store: RANK/WORLD_SIZE (torchrun),
  // OMPI_COMM_WORLD_RANK/SIZE (mpirun), SLURM_PROCID/SLURM_NTASKS (srun),
  // and bench's own launcher's mark (bench_options.h). Unset: none is set.
  EnvLookup launcher_env;
  std::string self_exe;  // this binary (from /proc/self/exe)
  std::string cwd;       // the working directory
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // The terminal's width now (it may be resized while a job is followed);
  // unset: terminal_width.
  std::function<int()> live_width;
  // Set by DescribeFlags: the command stores its flag table here and
  // returns kExitOk without doing anything (shell completion and help
  // read the very table the command parses with).
  std::vector<FlagSpec>* flag_table = nullptr;
};

// A command: gets the arguments after its name, returns the exit status.
using CommandFn = int (*)(const std::vector<std::string>& args,
                          const CommandEnv& env);

// The flag table of a command: `run` called with an env whose flag_table
// receives it (setters point at `run`'s locals: read the rows, never call
// their set). `args` pick a subcommand's table (DescribeFlags(&RunLab,
// {"sweep"})).
std::vector<FlagSpec> DescribeFlags(CommandFn run,
                                    const std::vector<std::string>& args = {});

// The environment of this process: std::cout/std::cerr, isatty(1), the
// variables above.
CommandEnv ProcessCommandEnv();

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

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_FRAMEWORK_COMMAND_ENV_H_
