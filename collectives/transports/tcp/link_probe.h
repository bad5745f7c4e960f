// MeasureLinks: what one rank of a link-probe job measures
// (models/link_probe/link_probe_spec.h, `gradsync links probe`): the round trip
// and the goodput of its links to other ranks, over TCP connections the ring's
// rendezvous made and authenticated (collectives/transports/tcp/rendezvous.h:
// the HMAC handshake over the job secret), so a probe uses the cluster's own
// channels and reaches only the job's ranks.
//
// Each rank has two connections per peer: on `initiate[p]` it calls peer
// p, on `respond[p]` p calls it (two rendezvous), so that the two
// directions of a pair never share a byte stream. The rounds (from
// LinkProbeRounds) run in order; in each, every rank calls at most one
// peer and answers at most one:
//
//   caller -> answerer  head: "GSLK", the round, the round trips, the
//                       stream's bytes (both must expect the same)
//   round trips         8 bytes each way, timed by the caller
//   barrier             every rank has finished its round trips, so that
//                       no stream queues in front of a timed message
//   stream              stream_bytes from the caller; the answerer times
//                       what comes after the first eighth (TCP's slow
//                       start) and answers its goodput (8 bytes, a
//                       double in bytes/s)
//   barrier             every stream of the round is in
//
// A failure on either side aborts the probe here (the abort flag, and every
// connection shut down), so that the peers fail at once too instead of at
// their deadlines.
//
// Errors name the peer, the round and the phase: DEADLINE_EXCEEDED (a phase
// passed `timeout`; a link far slower than expected or a host that
// stopped), UNAVAILABLE (the peer closed), ABORTED (cancelled), INTERNAL (a
// head that does not match: another build, or a bug).
// Threading: MeasureLinks runs on the calling thread plus one answering
// thread of its own, joined before it returns.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_LINK_PROBE_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_LINK_PROBE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collectives/store.h"
#include "collectives/transports/tcp/socket.h"

namespace gradsync {

inline constexpr uint32_t kLinkProbeMagic = 0x4b4c5347;  // "GSLK"

struct LinkProbeConfig {
  int rank = 0;
  int size = 0;
  // Rounds of (from, to) pairs; every rank runs the same list.
  std::vector<std::vector<std::pair<int, int>>> rounds;
  int64_t stream_bytes = int64_t{64} << 20;
  int round_trips = 20;
  // Per phase of a round (round trips, stream, each barrier).
  absl::Duration timeout = absl::Seconds(60);
};

// One link this rank measured, to `to`.
struct MeasuredLink {
  int from = 0;
  int to = 0;
  double goodput_Bps = 0;  // payload per second the receiver read
  int64_t stream_bytes = 0;
  double rtt_median_us = 0;
  double rtt_min_us = 0;
  int round_trips = 0;
};

// Blocks until every rank of `size` called it with the same `name`, or
// `deadline` (DEADLINE_EXCEEDED naming the ranks missing): each rank sets
// "<name>/<rank>" in `store` and waits for the others' keys.
[[nodiscard]] absl::Status StoreBarrier(Store* store, absl::string_view name,
                                        int rank, int size,
                                        absl::Time deadline);

// Runs `config.rounds` with the peers: `initiate` and `respond` hold a
// connected socket for every peer this rank calls or answers (indexed by
// rank). `barrier(name, deadline)` must block until every rank reached
// `name`. `abort` is polled by every blocking call, and set on failure.
// Returns the links this rank called, in round order.
[[nodiscard]] absl::StatusOr<std::vector<MeasuredLink>> MeasureLinks(
    const LinkProbeConfig& config, const std::vector<Socket>& initiate,
    const std::vector<Socket>& respond,
    absl::FunctionRef<absl::Status(absl::string_view, absl::Time)> barrier,
    std::atomic<bool>* abort);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_LINK_PROBE_H_
