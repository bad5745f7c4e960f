// `gradsync plan`: which synchronisation layout, and how many parameter
// servers, a cluster should use, answered by sweeping the step simulator
// (study/sim/plan_sweep.h) over worker counts, layouts and server counts.
// For each worker count it prints the best layout, its step time and
// throughput, the ring's and the hierarchical all-reduce's, the speedup
// over the ring, K* (the fewest separate servers as fast as the ring)
// and what bounds the best layout.
//
//   gradsync plan --workers 8..1024 --gpus-per-node 8 --link 100gbit
//       --model-profile bert-large --grad-dtype bf16
//
// It talks to no cluster. Exit statuses as every command's
// (cli/framework/command_env.h): 0 done, 2 a bad flag, profile, rate or
// calibration file.
#ifndef GRADSYNC_CLI_PLAN_PLAN_COMMAND_H_
#define GRADSYNC_CLI_PLAN_PLAN_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace plan {

int RunPlan(const std::vector<std::string>& args, const CommandEnv& env);

}  // namespace plan
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_PLAN_PLAN_COMMAND_H_
