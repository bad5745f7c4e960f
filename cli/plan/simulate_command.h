// `gradsync simulate`: one data-parallel training step of a published
// network on a cluster the user describes, through the step simulator
// (study/sim/step_simulator.h): the step time, forward and backward, the
// exposed communication, the bottleneck and the busiest links, and with
// --trace the step's timeline as a Chrome trace.
//
//   gradsync simulate --model-profile bert-large --workers 64
//       --gpus-per-node 8 --link 100gbit --layout ps --servers 8
//       --grad-dtype bf16 --trace step.json
//
// It talks to no cluster. Exit statuses as every command's
// (cli/framework/command_env.h): 0 done, 1 a file it could not write, 2 a
// bad flag, profile, rate or calibration file.
#ifndef GRADSYNC_CLI_PLAN_SIMULATE_COMMAND_H_
#define GRADSYNC_CLI_PLAN_SIMULATE_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace plan {

int RunSimulate(const std::vector<std::string>& args, const CommandEnv& env);

}  // namespace plan
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_PLAN_SIMULATE_COMMAND_H_
