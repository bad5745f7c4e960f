// The all-reduce algorithms of the TCP ring path, and their names as users
// write them (`gradsync bench --algo`, JobSpec.ring_algorithm). Apart from
// the communicators that implement them (collectives/tcp/
// tcp_communicator.h, collectives/hierarchical_communicator.h) so that
// code checking a name (the coordinator, the CLI) links no transport.
//
//   ASSIGN_OR_RETURN(AllReduceAlgorithm algo, ParseAllReduceAlgorithm("hd"));
//   AllReduceAlgorithmName(algo);  // "hd"
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COLLECTIVES_ALL_REDUCE_ALGORITHM_H_
#define GRADSYNC_COLLECTIVES_ALL_REDUCE_ALGORITHM_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

enum class AllReduceAlgorithm {
  kAuto,             // halving-doubling below the threshold, ring above
  kRing,             // bandwidth-optimal: 2(N-1) steps, 2(N-1)/N * S bytes
  kHalvingDoubling,  // latency-optimal: 2 log2(N) steps (Rabenseifner)
  // Host-aware: reduce-scatter in each host, all-reduce across hosts,
  // all-gather in each host (collectives/hierarchical_communicator.h,
  // which alone implements it; a TCP communicator treats it as kAuto).
  kHierarchical,
};

// Case-insensitive: "auto", "ring", "hd" (or "halving-doubling", "rhd"),
// "hierarchical" (or "hier"); INVALID_ARGUMENT naming the accepted ones
// otherwise.
[[nodiscard]] absl::StatusOr<AllReduceAlgorithm> ParseAllReduceAlgorithm(
    absl::string_view name);

// The canonical name: "auto", "ring", "hd" or "hierarchical"; parsing it
// gives `algorithm` back.
absl::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALL_REDUCE_ALGORITHM_H_
