// Pieces shared by the control commands (job_commands.cc,
// resume_command.cc): parsing a command line with the common flags,
// positional-argument checks, the coordinator client, and following a job
// to its end (submit --follow, watch, resume --follow).
#ifndef GRADSYNC_CLI_CONTROL_COMMAND_COMMON_H_
#define GRADSYNC_CLI_CONTROL_COMMAND_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/control/command_env.h"
#include "cli/control/control_client.h"
#include "common/flags.h"

namespace gradsync {
namespace cli {
namespace control {

// Flags of the commands that follow a job.
struct FollowOptions {
  bool follow = false;
  int64_t every = 0;
  absl::Duration deadline = absl::InfiniteDuration();
};

// --every and --deadline (the caller adds --follow where it is optional).
void AddFollowFlags(FollowOptions* options, std::vector<FlagSpec>* flags);

// Gives the row named `name` the one-letter name `letter` (-w for
// --workers, -n for --steps, -f for --follow: the same letter means the
// same thing in every control command).
void SetShortName(absl::string_view name, char letter,
                  std::vector<FlagSpec>* flags);

// Parses `args` with the command's own `flags` followed by the common
// ones (into `common`); returns the exit status when the command is done
// already (--help, or a bad command line), nullopt to go on.
std::optional<int> ParseCommand(const std::vector<std::string>& args,
                                std::vector<FlagSpec> flags,
                                absl::string_view command,
                                absl::string_view usage, const CommandEnv& env,
                                CommonOptions* common,
                                std::vector<std::string>* positional);

// Checks that exactly `want` positional arguments (named `what`) came;
// otherwise reports the usage error and returns its exit status.
std::optional<int> ExpectPositional(const std::vector<std::string>& args,
                                    const std::vector<std::string>& positional,
                                    size_t want, absl::string_view what,
                                    absl::string_view command,
                                    const CommandEnv& env);

// The users' token file for the coordinator at `address`: `flag`, else
// $GRADSYNC_TOKEN_FILE, else RUN_DIR/user-token ($GRADSYNC_RUN_DIR, else
// .run) when that local cluster's coordinator is `address`; "" for none.
std::string ResolveTokenFile(const std::string& flag, const CommandEnv& env,
                             const std::string& address);

// The TLS directory for the coordinator at `address`: `flag`, else
// $GRADSYNC_TLS_DIR, else the one the local cluster in RUN_DIR recorded
// (cluster.json) when that cluster's coordinator is `address`; "" for none
// (plaintext).
std::string ResolveTlsDir(const std::string& flag, const CommandEnv& env,
                          const std::string& address);

// A client of the coordinator that --coordinator or the environment names,
// with the users' token and TLS directory resolved as above (--insecure
// prints PlaintextWarning on env.err).
std::unique_ptr<ControlClient> MakeClient(const CommonOptions& common,
                                          const CommandEnv& env);

double NowSeconds(const CommandEnv& env);

// Follows the job to its end, printing progress and the final report (or
// JSON events), and on into the jobs that restart it (JobSpec
// max_restarts); exit 0 only if the last one SUCCEEDED.
int Follow(ControlClient& client, const std::string& job_id,
           const FollowOptions& follow, bool json, absl::string_view command,
           const CommandEnv& env);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_COMMAND_COMMON_H_
