// Bandwidth arithmetic shared by `gradsync bench` and a job's per-step
// metrics, with nccl-tests' definitions (its doc/PERFORMANCE.md):
//
//   algbw = S / t   S: the bytes each rank synchronises (the gradient, or
//                   a benchmark's buffer); t: the time the synchronisation
//                   was busy (BusyTime below for a step);
//   busbw = algbw * factor, the factor being the bytes a link carries
//                   relative to S, so that busbw compares with the links'
//                   speed whatever N is:
//     ring all-reduce of N ranks          2(N-1)/N
//     parameter server, N ranks, K shards 2 * max(1, N/K): a worker's link
//                   carries S each way and a shard's N*S/K each way; the
//                   busier one sets the pace. Both reach B when the
//                   busiest link runs at B.
//
// IdealBusBandwidth is the busbw the links of a cluster allow an
// all-reduce (docs/architecture.md, "Measuring"): N ranks on Q nodes, at
// most P on one node, ranks on links of B, nodes on links of I. A
// hierarchical all-reduce (NCCL's, or
// collectives/tcp/host_aware_communicator.h) moves 2(P-1)/P S over the links of
// the fullest node's ranks and 2(Q-1)/Q S over every node's link; with busbw =
// algbw 2(N-1)/N:
//   Q = 1: B;   Q > 1: min(I(N-1)Q / (N(Q-1)), B P(N-1) / (N(P-1))),
// the second term only when P > 1 (with one rank per node, every ring hop
// crosses the node link). With P ranks on every node (N = PQ) the second
// term is nccl-tests' B(N-1)/(N-Q); on uneven nodes (3 + 1 ranks) the
// fullest node binds.
#ifndef GRADSYNC_STUDY_ALPHA_BETA_SYNC_BANDWIDTH_H_
#define GRADSYNC_STUDY_ALPHA_BETA_SYNC_BANDWIDTH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

// busbw / algbw of a ring all-reduce: 2(N-1)/N; 0 for N < 2.
double AllReduceBusFactor(int ranks);

// busbw / algbw of one push + pull through K shards: 2 * max(1, N/K); 0
// for K < 1.
double PsBusFactor(int ranks, int shards);

// algbw in GB/s (1e9 bytes per second); 0 when `busy` is not positive.
double AlgorithmBandwidth(int64_t bytes, absl::Duration busy);

// [begin, end) of something in progress.
struct TimeInterval {
  absl::Time begin;
  absl::Time end;
};

// The length of the union of `intervals` (empty or reversed ones count
// nothing): how long at least one of them was in progress.
absl::Duration BusyTime(std::vector<TimeInterval> intervals);

struct ClusterLinks {
  double link_gbps = 0.0;       // B: a rank's link within a node, GB/s
  double node_link_gbps = 0.0;  // I: a node's link to the others, GB/s
  int ranks_per_node = 1;       // P: the most ranks on one node
  int nodes = 1;                // Q
  // The ranks on each node when they differ (Q entries, the largest P);
  // empty: P on every node.
  std::vector<int> node_ranks;
};

// The formula above. INVALID_ARGUMENT for B <= 0, P or Q < 1, I <= 0 on
// more than one node, or node_ranks that do not match P and Q.
[[nodiscard]] absl::StatusOr<double> IdealBusBandwidth(
    const ClusterLinks& links);

}  // namespace gradsync

#endif  // GRADSYNC_STUDY_ALPHA_BETA_SYNC_BANDWIDTH_H_
