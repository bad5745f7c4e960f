// The gRPC sync-server settings every gradsync daemon (store, coordinator,
// parameter server) shares, so that they behave alike under blocking calls.
//
// Idle pollers are kept for the next calls: a thread that picks up a call
// starts a new poller when fewer than kSyncServerMinPollers are left, so a
// blocked call (a long-poll, a store wait, a barrier) never leaves the
// server without a thread to accept the call that releases it; threads
// finishing a call exit when kSyncServerMaxPollers are already polling.
#ifndef GRADSYNC_SERVER_STORE_SYNC_SERVER_H_
#define GRADSYNC_SERVER_STORE_SYNC_SERVER_H_

#include <grpcpp/server_builder.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "observability/health_server.h"  // EnableHealthAndReflection

namespace gradsync {

inline constexpr int kSyncServerMinPollers = 2;
inline constexpr int kSyncServerMaxPollers = 8;

// Applies the shared settings to `builder`: at most `max_threads` threads
// (at least kSyncServerMaxPollers + 1), one completion queue, the pollers
// above, and SO_REUSEPORT off (gRPC turns it on by default on Linux, which
// would let two servers share a port and split their clients).
void ConfigureSyncServer(grpc::ServerBuilder& builder,
                         const std::string& quota_name, int max_threads);

// The host of a daemon's listen address "host:port" (port 0..65535, split
// at the last colon); INVALID_ARGUMENT "<what> listen address '<address>'
// is not host:port (for example <examples>)" otherwise.
[[nodiscard]] absl::StatusOr<std::string> ListenHost(
    const std::string& address, absl::string_view what,
    absl::string_view examples);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_STORE_SYNC_SERVER_H_
