// `gradsync explain JOB`: a finished or running job's synchronisation
// against the alpha-beta model (the logic is the study's: study/explain.h;
// this command fetches what it reads from the coordinator, ExplainInputOf,
// and prints what it says). The link facts come from
// --link-gbps (each host's link, GB/s of payload) and --link-alpha-us, or
// from the lab (lab.json: its link rate, and its newest sweep's fit) when
// the job runs on one. Where the job's model has a layer profile and its
// layout is known, each mode is also simulated (study/sim/sim_explain.h).
#ifndef GRADSYNC_CLI_LAB_EXPLAIN_COMMAND_H_
#define GRADSYNC_CLI_LAB_EXPLAIN_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"
#include "proto/coordinator.pb.h"
#include "study/explain.h"

namespace gradsync {
namespace lab {

// What study::ExplainJob reads of `job`, from the coordinator's answers:
// its ranks' hosts, its shards' servers with their hosts (from `cluster`),
// its spec's PS partition size, bucket size and model (kind, profile
// tensors, scale, emulated compute), and its step metrics and shards'
// traffic (from `metrics`). A rank's SYNC_MODE_UNSPECIFIED is the ring.
study::ExplainInput ExplainInputOf(const JobStatus& job,
                                   const GetMetricsResponse& metrics,
                                   const ListWorkersResponse& cluster);

int RunExplain(const std::vector<std::string>& args,
               const cli::CommandEnv& env);
int ExplainMain(const std::vector<std::string>& args);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_EXPLAIN_COMMAND_H_
