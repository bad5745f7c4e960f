// Connecting gRPC channels in spite of a gRPC 1.51 bug.
//
// gRPC 1.51 (Debian 12's) reads errno for a connect() in progress only
// after other calls that may overwrite it (grpc/grpc#35064, fixed in a
// later release), so now and then a connection attempt to a live server
// fails as "connect: No such file or directory". The channel then sits in
// TRANSIENT_FAILURE for its reconnect backoff, and a call started on it
// fails at once with UNAVAILABLE. In a PS step that fails the step for
// every rank; in the CLI it says the coordinator is unreachable.
//
// ConnectChannel brings a channel to READY before a call starts, retrying
// failed attempts after the reconnect backoff that SetReconnectBackoff
// gives the channel (100 ms), and gives up only when the channel stays in
// TRANSIENT_FAILURE for kConnectRetryWindow, as it does when no server
// listens.
//
// Thread-safe (gRPC channels are).
#ifndef GRADSYNC_COMMON_GRPC_CONNECT_H_
#define GRADSYNC_COMMON_GRPC_CONNECT_H_

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gradsync {

inline constexpr absl::Duration kConnectRetryWindow = absl::Seconds(1);

// Reconnect backoff for channels that ConnectChannel connects: 100 ms
// first, at most 1 s.
void SetReconnectBackoff(grpc::ChannelArguments* args);

// Returns at once when `channel` is READY (the common case: one GetState
// per call); otherwise connects it. Returns UNAVAILABLE when every attempt
// failed for kConnectRetryWindow, DEADLINE_EXCEEDED if `deadline` passes
// first, or the error of `alive()`, which it checks every 100 ms (a
// cancelled caller stops waiting).
[[nodiscard]] absl::Status ConnectChannel(
    grpc::Channel* channel, absl::Time deadline,
    absl::FunctionRef<absl::Status()> alive);
// The same for a caller that cannot be cancelled.
[[nodiscard]] absl::Status ConnectChannel(grpc::Channel* channel,
                                          absl::Time deadline);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_GRPC_CONNECT_H_
