// gradsync logs JOB [--rank R] [--follow]: a job's log lines from its
// workers, through the coordinator (logs_command.cc).
#ifndef GRADSYNC_CLI_CONTROL_LOGS_COMMAND_H_
#define GRADSYNC_CLI_CONTROL_LOGS_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"
#include "proto/coordinator.pb.h"

namespace gradsync {
namespace cli {
namespace control {

int RunLogs(const std::vector<std::string>& args, const CommandEnv& env);

// "2026-11-27 06:44:37.123  node-a  rank 2  text" (UTC; rank "-" for the
// worker's own lines), host and text made TerminalSafe.
std::string FormatLogLine(const JobLogLine& line);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_LOGS_COMMAND_H_
