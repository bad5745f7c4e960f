// Who may join a cluster as a daemon. RegisterWorker and
// RegisterParameterServer hand out what a daemon needs to run jobs (a
// credential, and with it every assigned job's ring secret, PS token and
// checkpoint path), so they admit only callers that prove to be daemons
// of this cluster, never a user:
//   - under mTLS, the caller's certificate must be a node certificate:
//     one carrying the cluster's server name (kClusterServerName), which
//     `gradsync certs init` gives node.pem only, never the users'
//     client.pem;
//   - with a join token (the coordinator's --join-token-file; under
//     --insecure the only proof there is), the request must carry it.
// docs/security.md ("Daemon identity") has the threat model.
#ifndef GRADSYNC_SERVER_COORDINATOR_DAEMON_ADMISSION_H_
#define GRADSYNC_SERVER_COORDINATOR_DAEMON_ADMISSION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/coordinator/coordinator_config.h"

namespace gradsync {

// What the RPC layer saw of a registering caller.
struct DaemonCaller {
  std::string peer;  // gRPC's peer string ("ipv4:10.0.0.5:41234"); may be ""
  // The caller presented a certificate of the cluster's CA that carries
  // the node server name (mTLS only).
  bool node_certificate = false;
};

// Whether the subject alternative names of a peer's certificate (gRPC's
// GRPC_X509_SAN_PROPERTY_NAME values) make it a node certificate.
bool IsNodeCertificate(const std::vector<std::string>& subject_alt_names);

// OK when `caller`, registering as `what` ("worker on host h1") with
// `join_token`, may join; PERMISSION_DENIED naming what is missing and
// what to do otherwise.
[[nodiscard]] absl::Status AdmitDaemon(const CoordinatorConfig& config,
                                       absl::string_view what,
                                       absl::string_view join_token,
                                       const DaemonCaller& caller);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_DAEMON_ADMISSION_H_
