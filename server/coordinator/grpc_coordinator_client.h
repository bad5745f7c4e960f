// The gRPC implementation of CoordinatorClient (coordinator_client.h), and
// the channel every coordinator client opens.
//
//   std::shared_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(
//       NewCoordinatorChannel(address), address);
//
// Each call gets its own grpc::ClientContext with the call's deadline,
// registered with the call's CancellableCalls (TryCancel), and its
// grpc::Status converted one to one (common/grpc_status.h). A failure while
// the channel is not connected carries the unreachable payload.
//
// Threading: thread-safe (gRPC stubs are).
#ifndef GRADSYNC_SERVER_COORDINATOR_GRPC_COORDINATOR_CLIENT_H_
#define GRADSYNC_SERVER_COORDINATOR_GRPC_COORDINATOR_CLIENT_H_

#include <grpcpp/channel.h>

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {

struct CoordinatorChannelOptions {
  // Keepalive pings on an idle connection, so that a coordinator host that
  // vanished during a long stream (the CLI's WatchJob) is noticed. Five
  // minutes matches gRPC servers' default minimum ping interval, so the
  // coordinator never answers them with "too many pings".
  bool keepalive = false;
  // No limit on received messages (the metrics of long jobs pass gRPC's
  // default 4 MiB).
  bool unlimited_receive = false;
  // Mutual TLS or plaintext (security/tls.h); default plaintext.
  GrpcSecurity security;
};

// A channel to `address`, secured as options.security says, that
// reconnects quickly (100 ms, backing off to at most 1 s) when the
// coordinator comes back; nothing is sent until the first call.
std::shared_ptr<grpc::Channel> NewCoordinatorChannel(
    const std::string& address, const CoordinatorChannelOptions& options = {});

struct GrpcCoordinatorClientOptions {
  // Brings the channel to READY before each call (for at most the call's
  // deadline), retrying through gRPC 1.51's spurious connect failures
  // (common/grpc_connect.h); a coordinator that is really not there still
  // fails the call at once.
  bool connect_first = false;
  // The longest connect_first waits, whatever the call's deadline (a
  // stream may have none).
  absl::Duration connect_timeout = absl::Seconds(10);
  // The users' token, sent with every call ("authorization: Bearer ...",
  // kUserTokenMetadata) when not empty: the CLI's.
  std::string user_token;
};

// The options of a daemon's client (worker, PS): connect_first. In gRPC
// 1.51 a connection attempt advances only while some thread of the process
// polls; a call that fails at once on a TRANSIENT_FAILURE channel polls
// nothing, and the channel's backup poller runs every 5 s. A TLS handshake
// takes several round trips, so after a coordinator restart a worker whose
// ranks make no gRPC calls (ring mode) re-attached only every 5 s per round
// trip and lost its lease; connect_first makes each call drive its own
// connection.
GrpcCoordinatorClientOptions DaemonCoordinatorClientOptions();

// A client over `channel`; `target` names the coordinator in messages.
std::shared_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    std::shared_ptr<grpc::Channel> channel, std::string target,
    GrpcCoordinatorClientOptions options = {});

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_GRPC_COORDINATOR_CLIENT_H_
