// The commands of the `gradsync` CLI that talk to a running coordinator:
//
//   gradsync submit [spec flags | --file job.json] [--follow]
//   gradsync watch JOB
//   gradsync status [JOB]
//   gradsync cancel JOB
//   gradsync metrics JOB [--format csv|json|table]
//   gradsync workers
//   gradsync switch JOB ps|ring
//   gradsync resume JOB [--from FILE] [--steps N] [--follow]
//                                     (resume_command.cc)
//
// Each takes --coordinator HOST:PORT (else $GRADSYNC_COORDINATOR, else
// 127.0.0.1:29400), --timeout SECONDS (per call) and --json (one JSON
// document per line on stdout; errors as {"error":{...}}). Each Run*
// function gets the arguments after the command's name and returns the
// exit status (see command_env.h); the *Main adapters are the rows of
// main.cc's table.
#ifndef GRADSYNC_CLI_CONTROL_JOB_COMMANDS_H_
#define GRADSYNC_CLI_CONTROL_JOB_COMMANDS_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace control {

int RunSubmit(const std::vector<std::string>& args, const CommandEnv& env);
int RunWatch(const std::vector<std::string>& args, const CommandEnv& env);
int RunStatus(const std::vector<std::string>& args, const CommandEnv& env);
int RunCancel(const std::vector<std::string>& args, const CommandEnv& env);
int RunMetrics(const std::vector<std::string>& args, const CommandEnv& env);
int RunWorkers(const std::vector<std::string>& args, const CommandEnv& env);
int RunSwitch(const std::vector<std::string>& args, const CommandEnv& env);
int RunResume(const std::vector<std::string>& args, const CommandEnv& env);

int SubmitMain(const std::vector<std::string>& args);
int WatchMain(const std::vector<std::string>& args);
int StatusMain(const std::vector<std::string>& args);
int CancelMain(const std::vector<std::string>& args);
int MetricsMain(const std::vector<std::string>& args);
int WorkersMain(const std::vector<std::string>& args);
int SwitchMain(const std::vector<std::string>& args);
int ResumeMain(const std::vector<std::string>& args);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_JOB_COMMANDS_H_
