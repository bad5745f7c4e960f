// `gradsync lab calibrate`: fits the step simulator's calibration
// (study/sim/calibration.h) to recorded lab sweeps and checks it on the
// cells it did not see (docs/simulator.md, "Calibration and validation").
//
//   gradsync lab calibrate --sweep fit/sweep.json -o calibration.json
//   gradsync lab calibrate --sweep fit/sweep.json --sweep held/sweep.json
//       --validate --markdown validation.md          (one command line)
//   gradsync lab calibrate --calibration calibration.json
//       --sweep held/sweep.json --validate           (no fit: predict only)
//   gradsync plan ... --calibration calibration.json
//
// It reads files only: no lab needs to be up, and it needs no root. The
// fit sees the cells with N <= --max-workers (4); --validate predicts the
// others (the held-out cells) and prints their error table against the
// target (mean |error| <= 8 %, no cell beyond 20 %), ending in PASS or
// MISS. A MISS still exits 0: the table is the result.
//
// Exit statuses: 0 done; 1 a file that cannot be read or written, or no
// cell to fit or validate; 2 bad flags or a file that is not a sweep or a
// calibration.
// Threading: runs on the calling thread; reads and writes only the files
// it is given.
#ifndef GRADSYNC_CLI_LAB_LAB_CALIBRATE_COMMAND_H_
#define GRADSYNC_CLI_LAB_LAB_CALIBRATE_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace lab {

// `args` are the arguments after "lab calibrate".
int RunLabCalibrate(const std::vector<std::string>& args,
                    const cli::CommandEnv& env);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_CALIBRATE_COMMAND_H_
