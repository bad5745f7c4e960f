#include "server/coordinator/daemon_admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "security/certs.h"
#include "security/secret.h"

namespace gradsync {

bool IsNodeCertificate(const std::vector<std::string>& subject_alt_names) {
  return std::find(subject_alt_names.begin(), subject_alt_names.end(),
                   std::string(kClusterServerName)) != subject_alt_names.end();
}

absl::Status AdmitDaemon(const CoordinatorConfig& config,
                         absl::string_view what, absl::string_view join_token,
                         const DaemonCaller& caller) {
  const std::string from =
      caller.peer.empty() ? "" : absl::StrCat(" (from ", caller.peer, ")");
  if (config.require_node_certificate && !caller.node_certificate) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, from,
        " did not present this cluster's node certificate: a users' "
        "certificate (client.pem) does not make a daemon. Start daemons with "
        "the --tls-dir that holds node.pem and node.key"));
  }
  if (!config.join_token.empty() &&
      !SecretsEqual(join_token, config.join_token)) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, from,
        join_token.empty() ? " presented no join token"
                           : " presented a join token that is not this "
                             "cluster's",
        ": start it with --join-token-file naming a copy of the file the "
        "coordinator's --join-token-file names (`gradsync local up` writes "
        "RUN_DIR/join-token)"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
