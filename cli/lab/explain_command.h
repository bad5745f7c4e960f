// `gradsync explain JOB`: a finished or running job's synchronisation
// against the alpha-beta model (explain.h). The link facts come from
// --link-gbps (each host's link, GB/s of payload) and --link-alpha-us, or
// from the lab (lab.json: its link rate, and its newest sweep's fit) when
// the job runs on one.
#ifndef GRADSYNC_CLI_LAB_EXPLAIN_COMMAND_H_
#define GRADSYNC_CLI_LAB_EXPLAIN_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace lab {

int RunExplain(const std::vector<std::string>& args,
               const cli::CommandEnv& env);
int ExplainMain(const std::vector<std::string>& args);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_EXPLAIN_COMMAND_H_
