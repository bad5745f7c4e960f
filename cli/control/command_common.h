// Pieces shared by the control commands (job_commands.cc,
// resume_command.cc, ...) and by the lab's commands that talk to a
// coordinator (explain, lab sweep): the coordinator's flags on top of the
// framework's (cli/framework/parse_command.h), the coordinator client with
// the users' token and TLS directory resolved, and following a job to its
// end (submit --follow, watch, resume --follow).
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
#include "cli/control/control_client.h"
#include "cli/framework/command_env.h"
#include "cli/framework/parse_command.h"
#include "common/flags.h"
#include "security/tls.h"

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

// Flags every command that talks to the coordinator takes, on top of the
// framework's -o/--output and -h/--help.
struct CommonOptions : CommandOptions {
  std::string coordinator;  // --coordinator; empty: env, then the default
  std::string token_file;   // --token-file; empty: env, then the local one
  // --tls-dir (empty: env, then the local cluster's) and --insecure.
  TlsOptions tls;
  absl::Duration timeout = absl::Seconds(10);  // per call
};

// Appends -c/--coordinator, --token-file, --tls-dir, --insecure and
// --timeout rows.
void AddCoordinatorFlags(CommonOptions* options, std::vector<FlagSpec>* flags);

// cli::ParseCommand with the coordinator's flags between the command's
// own and the framework's: parses into `common`; returns the exit status
// when the command is done already (--help, or a bad command line),
// nullopt to go on.
std::optional<int> ParseCommand(const std::vector<std::string>& args,
                                std::vector<FlagSpec> flags,
                                absl::string_view command,
                                absl::string_view usage, const CommandEnv& env,
                                CommonOptions* common,
                                std::vector<std::string>* positional);

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
