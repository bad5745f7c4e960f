// The version of what gradsync's daemons say to each other: the coordinator,
// gradsync-ps and gradsync-worker, over gRPC and over the ring's sockets.
// Daemons of different builds may disagree on a message without either
// noticing (a PS push with trailer scalars reads as "more data than the
// gradient" to an older server), so the coordinator registers only daemons
// that speak its version, and every pair of daemons that talk in a job has
// registered with the same coordinator.
//
// Bump kWireVersion with any change that a daemon of the previous build
// would misread; additive fields that old readers ignore do not need it.
//   0: a build from before registration carried the version;
//   1: the first versioned build (PS pushes may carry trailer scalars);
//   2: daemons carry credentials, the ring handshake proves the job
//      secret, and PS shard calls carry tokens (docs/security.md).
#ifndef GRADSYNC_COMMON_WIRE_VERSION_H_
#define GRADSYNC_COMMON_WIRE_VERSION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

inline constexpr int32_t kWireVersion = 2;

// OK when a daemon that announced `peer_version` may join; otherwise
// FAILED_PRECONDITION naming both versions, for `who` ("worker (host 'a',
// pid 7)") and telling the operator to deploy one build.
[[nodiscard]] absl::Status CheckWireVersion(int32_t peer_version,
                                            absl::string_view who);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_WIRE_VERSION_H_
