// `gradsync lab up|down|status|probe|set-link|sweep|report|calibrate`: the
// bottleneck lab, an emulated multi-host cluster on this machine
// (docs/lab.md); calibrate fits the step simulator to its sweeps
// (lab_calibrate_command.h).
//
//   sudo gradsync lab up --hosts 4 --ps-hosts 4 --link 1gbit
//   export GRADSYNC_COORDINATOR=10.77.0.1:29400   (printed by up)
//   gradsync submit ...                            (any command works)
//   sudo gradsync lab sweep --workers 2,4 --out sweep/
//   sudo gradsync lab down
//
// The run directory is --run-dir, else $GRADSYNC_LAB_DIR, else ./.lab.
#ifndef GRADSYNC_CLI_LAB_LAB_COMMAND_H_
#define GRADSYNC_CLI_LAB_LAB_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace lab {

// `args` are the arguments after "lab".
int RunLab(const std::vector<std::string>& args, const cli::CommandEnv& env);
int LabMain(const std::vector<std::string>& args);

// The lab's run directory as an absolute path: `flag` (--run-dir,
// explain's --lab-dir), else env.lab_dir_env ($GRADSYNC_LAB_DIR), else
// ./.lab; a relative one is taken from env.cwd.
std::string ResolveLabDir(const std::string& flag, const cli::CommandEnv& env);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_COMMAND_H_
