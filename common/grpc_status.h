// Conversions between absl::Status (what gradsync's logic returns) and
// grpc::Status (what crosses the wire), used by every gRPC adapter and
// client (store, coordinator, parameter server, worker daemon, CLI). Both use
// the google.rpc.Code numbering, so codes map one to one and messages are
// carried unchanged. A gRPC code outside that numbering (only from a
// misbehaving peer) becomes UNKNOWN, and the message names it.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_GRPC_STATUS_H_
#define GRADSYNC_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace gradsync {

// Returns the grpc::Status with the code and message of `status`.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Returns the absl::Status with the code and message of `status`.
[[nodiscard]] absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_GRPC_STATUS_H_
