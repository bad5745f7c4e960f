// What the step simulator is asked: the cluster (workers, GPUs per node,
// link rates), the synchronisation layout and its knobs (servers,
// partitions, transport, buckets, gradient width) and the calibration.
// docs/simulator.md describes the model behind each field.
//
//   SimConfig config;
//   config.layout = SimLayout::kPsSeparate;
//   config.topology = {/*workers=*/64, /*gpus_per_node=*/8,
//                      /*nic_Bps=*/100e9 / 8, /*intra_Bps=*/300e9};
//   config.servers = 8;
//   RETURN_IF_ERROR(ValidateSimConfig(config));
//
// Errors: INVALID_ARGUMENT naming the field (ValidateSimConfig, the
// parsers).
// Threading: plain data and pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_SIM_CONFIG_H_
#define GRADSYNC_STUDY_SIM_SIM_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "study/sim/calibration.h"

namespace gradsync {
namespace sim {

enum class SimLayout {
  kRing,             // flat ring all-reduce over every GPU
  kHalvingDoubling,  // recursive halving-doubling (Rabenseifner)
  kHierarchical,     // reduce-scatter in the node, ring across, all-gather
  kPsSeparate,       // K parameter servers on hosts of their own
  kPsColocated,      // K servers on K of the worker nodes (BytePS's layout)
};

// "ring", "hd", "hierarchical", "ps", "ps-colocated".
absl::string_view SimLayoutName(SimLayout layout);
// The inverse of SimLayoutName (also "halving-doubling", "hier");
// INVALID_ARGUMENT naming the layouts for anything else.
[[nodiscard]] absl::StatusOr<SimLayout> ParseSimLayout(absl::string_view name);
// Every layout, in SimLayoutName's order.
std::vector<SimLayout> AllSimLayouts();
bool IsPsLayout(SimLayout layout);

enum class PsTransport {
  kPlane,  // the authenticated tensor plane (plain TCP)
  kGrpc,   // gRPC streams
};

// "plane", "grpc".
absl::string_view PsTransportName(PsTransport transport);
[[nodiscard]] absl::StatusOr<PsTransport> ParsePsTransport(
    absl::string_view name);

// How the PS spreads the gradient over its K servers.
enum class PsPlacement {
  // Server k owns one contiguous slice [begin_k, end_k) of the flat
  // gradient (a balanced split), as gradsync's own PS shards it.
  kContiguous,
  // BytePS's: every layer's gradient is cut into partitions of at most
  // partition_bytes, and the partitions go round-robin over the servers in
  // the order backward produces them (the last layer's first).
  kSpread,
};

// "contiguous", "spread".
absl::string_view PsPlacementName(PsPlacement placement);
[[nodiscard]] absl::StatusOr<PsPlacement> ParsePsPlacement(
    absl::string_view name);

// Bytes per gradient element on the wire: "fp32" 4, "bf16" and "fp16" 2.
[[nodiscard]] absl::StatusOr<int> ParseGradDtype(absl::string_view name);

// The cluster. Nodes hold `gpus_per_node` workers each (one worker per
// GPU), in rank order; every node has one NIC, full duplex, to a
// non-blocking switch; every GPU has a full-duplex link of `intra_Bps` to
// its node's other GPUs (an NVSwitch-like fabric: no contention between
// pairs). Separate parameter servers are hosts with a NIC of nic_Bps.
struct SimTopology {
  int workers = 1;        // N: GPUs in the job; a multiple of gpus_per_node
  int gpus_per_node = 1;  // G
  double nic_Bps = 0;     // each node's NIC, bytes/s each way (line rate)
  double intra_Bps = 0;   // each GPU's intra-node link, bytes/s each way

  int nodes() const { return gpus_per_node > 0 ? workers / gpus_per_node : 0; }
};

// PyTorch DDP's default bucket (bucket_cap_mb = 25), also the trainer's.
inline constexpr double kDefaultBucketBytes = 25.0 * (1 << 20);
// BytePS's default partition (BYTEPS_PARTITION_BYTES = 4096000).
inline constexpr double kDefaultPartitionBytes = 4096000;
// Above this many servers, servers are simulated in this many classes of
// neighbouring shards (docs/simulator.md, "Aggregation").
inline constexpr int kDefaultMaxServerClasses = 64;

struct SimConfig {
  SimLayout layout = SimLayout::kRing;
  SimTopology topology;
  // Element width of the gradients on the wire: 4 (fp32) or 2 (bf16,
  // fp16). Buckets and partitions are measured in these bytes.
  int grad_bytes_per_element = 4;

  // All-reduce layouts: buckets of at most bucket_bytes, cut from the end
  // of the flat gradient (the last layer's first), as the trainer's
  // Bucketer and DDP do. first_bucket_bytes > 0 caps the first bucket
  // only (DDP's 1 MiB first bucket); 0: the first is like the others.
  double bucket_bytes = kDefaultBucketBytes;
  double first_bucket_bytes = 0;

  // PS layouts: K servers. Contiguous placement: each owns a contiguous
  // slice of the flat gradient (a balanced split); a slice streams in
  // partitions of at most partition_bytes (0: one partition per slice),
  // from its end toward its start. Spread placement: each layer is cut
  // into partitions of at most partition_bytes (0: one per layer), dealt
  // round-robin over the servers in backward order. Pipelined: a
  // partition's pull may start as soon as its pushes are in; otherwise a
  // server's pulls start after all of its pushes.
  int servers = 1;
  PsPlacement ps_placement = PsPlacement::kContiguous;
  double partition_bytes = kDefaultPartitionBytes;
  bool ps_pipelined = true;
  PsTransport transport = PsTransport::kPlane;
  int server_cores = 16;  // each server's cores for the transport's CPU
  // PS layouts on nodes of G > 1 workers: each node first reduces its G
  // workers' copy of a partition over the intra-node links, one worker
  // pushes the node's sum, and after the pull it broadcasts the result in
  // the node (BytePS's design: M = N / G flows into each server instead
  // of N). false: every worker pushes and pulls its own copy. No effect
  // at G = 1.
  bool ps_node_reduce = true;
  int max_server_classes = kDefaultMaxServerClasses;

  SimCalibration calibration;
  bool record_timeline = true;  // false: a sweep needs only the numbers
};

// OK, or INVALID_ARGUMENT naming the first bad field: N < 1, G < 1, N not
// a multiple of G, rates that are not positive and finite (the intra-node
// rate only matters, and is only checked, when G > 1), a gradient width
// other than 2 or 4, buckets or partitions that are negative or smaller
// than one element, K < 1 for a PS, colocated K above the number of
// nodes, fewer than one server core or server class, and the
// calibration's own checks.
[[nodiscard]] absl::Status ValidateSimConfig(const SimConfig& config);

// The CPU cost per byte of `config`'s transport (calibration.h).
double ServerCpuSecondsPerByte(const SimConfig& config);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_SIM_CONFIG_H_
