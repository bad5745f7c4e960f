// Link timing over one connected socket: the measurements a link probe
// takes (`gradsync links probe`), shared by the probe between workers'
// ranks (link_probe.h) and the one between a rank and a parameter server's
// tensor plane (server/ps/transport/tensor_plane_probe.h), so both measure
// alike.
//
//   round trips   the caller sends kPingBytes, the other end echoes them;
//                 the caller times each and checks the echo
//   stream        one end sends `bytes` of filler; the receiver times what
//                 arrives after the first eighth (TCP's slow start), so its
//                 goodput is the link's steady payload rate
//
// Errors: the socket's (DEADLINE_EXCEEDED at `deadline`, UNAVAILABLE when
// the peer closed, ABORTED once `*abort`), and INTERNAL for an echo that
// is not what was sent. Callers name the peer and the phase.
// Thread-compatible: one call per socket direction at a time.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_LINK_TIMING_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_LINK_TIMING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/transports/tcp/socket.h"

namespace gradsync {

inline constexpr size_t kPingBytes = 8;

struct RoundTripTimes {
  double median_us = 0;
  double min_us = 0;
  int count = 0;
};

// Times `count` round trips (the other end runs EchoRoundTrips).
[[nodiscard]] absl::StatusOr<RoundTripTimes> TimeRoundTrips(
    const Socket& socket, int count, absl::Time deadline,
    const std::atomic<bool>* abort);

// Echoes `count` pings.
[[nodiscard]] absl::Status EchoRoundTrips(const Socket& socket, int count,
                                          absl::Time deadline,
                                          const std::atomic<bool>* abort);

// Sends `bytes` of filler.
[[nodiscard]] absl::Status SendFiller(const Socket& socket, int64_t bytes,
                                      absl::Time deadline,
                                      const std::atomic<bool>* abort);

// Receives `bytes` and returns the goodput after the first eighth, in
// bytes/s (0 when too little was counted to time).
[[nodiscard]] absl::StatusOr<double> ReceiveTimed(
    const Socket& socket, int64_t bytes, absl::Time deadline,
    const std::atomic<bool>* abort);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_LINK_TIMING_H_
