// `gradsync local up|down`: a whole cluster on this machine (see
// local_cluster.h for what it starts and records).
//
//   gradsync local up --workers 2 [--ps 1] [--devices-per-worker cpu:1]
//                     [--run-dir DIR] [--port 29400] [--timeout 30]
//   gradsync local down [--run-dir DIR]
//
// The run directory is --run-dir, else $GRADSYNC_RUN_DIR, else ./.run. The
// daemon binaries are looked for next to this binary's build folder
// (../server/coordinator/, ../worker/, ../server/ps/), then beside it,
// then on $PATH; --coordinator-binary / --worker-binary / --ps-binary name
// them outright.
#ifndef GRADSYNC_CLI_CONTROL_LOCAL_COMMAND_H_
#define GRADSYNC_CLI_CONTROL_LOCAL_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace control {

// `args` are the arguments after "local" (up|down and flags).
int RunLocal(const std::vector<std::string>& args, const CommandEnv& env);
int LocalMain(const std::vector<std::string>& args);

// The run directory as an absolute path: `flag`, else `env_value`, else
// ".run", relative ones taken from `cwd`.
std::string ResolveRunDir(const std::string& flag, const std::string& env_value,
                          const std::string& cwd);

// The daemon binaries, found as described at the top (each flag, when not
// empty, names one outright). NOT_FOUND saying where it looked.
struct DaemonBinaries {
  std::string coordinator;
  std::string worker;
  std::string ps;  // only when `need_ps`
};
[[nodiscard]] absl::StatusOr<DaemonBinaries> FindDaemonBinaries(
    const DaemonBinaries& flags, bool need_ps, const CommandEnv& env);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_LOCAL_COMMAND_H_
