// The all-reduce algorithms of the TCP ring path, their names as users
// write them (`gradsync bench --algo`, JobSpec.ring_algorithm), and the one
// rule that picks the algorithm an all-reduce runs
// (ChooseAllReduceAlgorithm). Apart from the communicators that implement
// them (collectives/tcp/tcp_communicator.h,
// collectives/algorithms/hierarchical_communicator.h) so that code checking
// a name (the coordinator, the CLI) links no transport.
//
//   ASSIGN_OR_RETURN(AllReduceAlgorithm algo, ParseAllReduceAlgorithm("hd"));
//   AllReduceAlgorithmName(algo);  // "hd"
//   AllReduceChoice c;
//   c.configured = algo;
//   c.bytes = count * DataTypeSize(type);
//   ChooseAllReduceAlgorithm(c);  // kHalvingDoubling
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COLLECTIVES_ALL_REDUCE_ALGORITHM_H_
#define GRADSYNC_COLLECTIVES_ALL_REDUCE_ALGORITHM_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

enum class AllReduceAlgorithm {
  kAuto,             // halving-doubling below the threshold, ring above
  kRing,             // bandwidth-optimal: 2(N-1) steps, 2(N-1)/N * S bytes
  kHalvingDoubling,  // latency-optimal: 2 log2(N) steps (Rabenseifner)
  // Host-aware: reduce-scatter in each host, all-reduce across hosts,
  // all-gather in each host (collectives/algorithms/
  // hierarchical_communicator.h, which alone implements it; a TCP
  // communicator treats it as kAuto).
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

// What the choice of one all-reduce's algorithm depends on.
struct AllReduceChoice {
  // What the job asked for (TcpOptions::algorithm, JobSpec.ring_algorithm).
  AllReduceAlgorithm configured = AllReduceAlgorithm::kAuto;
  // The size of the vector, in bytes.
  size_t bytes = 0;
  // The placement, where the communicator knows it (the hierarchical one):
  // the number of hosts and the ranks on the largest. 0: a flat
  // communicator, which has no hierarchy to run.
  int hosts = 0;
  int largest_host = 0;
  // Halving-doubling up to this many bytes, the ring above
  // (TcpOptions::halving_doubling_max_bytes).
  size_t halving_doubling_max_bytes = 2 << 20;
  // The hierarchy from this many bytes (HierarchicalOptions::min_bytes).
  size_t hierarchical_min_bytes = 2 << 20;
};

// The algorithm one all-reduce runs: kRing, kHalvingDoubling or
// kHierarchical, never kAuto. The single place that decides it; the
// communicators and the worker ask it.
//   kRing, kHalvingDoubling  that algorithm, always;
//   kHierarchical  the hierarchy wherever the placement is known (any
//                  placement, degenerate ones included), else as kAuto;
//   kAuto          the hierarchy when the placement is known, has several
//                  hosts and two ranks on one, and bytes >=
//                  hierarchical_min_bytes; otherwise halving-doubling up to
//                  halving_doubling_max_bytes and the ring above.
AllReduceAlgorithm ChooseAllReduceAlgorithm(const AllReduceChoice& choice);

// Whether ChooseAllReduceAlgorithm can pick the hierarchy for `configured`
// on any placement and size (it asks it about the largest vector on two
// hosts of two ranks): false for kRing and kHalvingDoubling, for which a
// host-aware communicator need not learn the placement at all.
bool MayChooseHierarchical(AllReduceAlgorithm configured);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALL_REDUCE_ALGORITHM_H_
