// `gradsync certs init DIR [--days N] [--force]`: a cluster CA and the
// certificates it signs for the daemons and the users, written to DIR
// (security/tls_dir.h lists the files; security/certs.h what each carries).
//
//   gradsync certs init /etc/gradsync/tls
//   gradsync-coordinator --tls-dir /etc/gradsync/tls ...
//   GRADSYNC_TLS_DIR=/etc/gradsync/tls gradsync workers
//
// Existing files are never overwritten without --force (exit 1, naming
// them). Exit statuses as every control command (command_env.h).
#ifndef GRADSYNC_CLI_CONTROL_CERTS_COMMAND_H_
#define GRADSYNC_CLI_CONTROL_CERTS_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace control {

// `args` are the arguments after "certs".
int RunCerts(const std::vector<std::string>& args, const CommandEnv& env);
int CertsMain(const std::vector<std::string>& args);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_CERTS_COMMAND_H_
