// Deadline arithmetic for gRPC clients: every gradsync call carries a
// deadline (an absl::Time), and the wire wants either a chrono time point
// or a relative timeout in milliseconds. The infinite future means "no
// deadline" on both sides.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_RPC_DEADLINE_H_
#define GRADSYNC_COMMON_RPC_DEADLINE_H_

#include <grpcpp/client_context.h>

#include <cstdint>

#include "absl/time/time.h"

namespace gradsync {

// Milliseconds left until `deadline`, rounded up, never negative; INT64_MAX
// for the infinite future.
int64_t MillisecondsUntil(absl::Time deadline);

// Sets the gRPC deadline of `context` (none for the infinite future, which
// is gRPC's default).
void SetRpcDeadline(grpc::ClientContext* context, absl::Time deadline);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_RPC_DEADLINE_H_
