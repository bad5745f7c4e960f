// `gradsync lab sweep` and `gradsync lab report`: run the PS-vs-ring grid on
// the lab and report it against the alpha-beta model (lab_sweep.h,
// lab_report.h), or report (and plot) a recorded sweep again.
//
//   sudo gradsync lab sweep --workers 2,4,6,8 --shards 1,2,N/2,N
//       --sizes 4M,16M --out sweep/ --plot   (one command line)
//   gradsync lab report sweep/sweep.json --plot
//
// Writes <out>/sweep.json (SweepResults), sweep.csv and report.txt; with
// --plot, PNGs through scripts/lab_plot.py (python3-matplotlib).
#ifndef GRADSYNC_CLI_LAB_LAB_SWEEP_COMMAND_H_
#define GRADSYNC_CLI_LAB_LAB_SWEEP_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace lab {

// `args` are the arguments after "lab sweep" / "lab report".
int RunLabSweep(const std::vector<std::string>& args,
                const cli::CommandEnv& env);
int RunLabReport(const std::vector<std::string>& args,
                 const cli::CommandEnv& env);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_SWEEP_COMMAND_H_
