// The collectives `gradsync bench` measures, and the arithmetic nccl-tests
// uses to turn a message size into element counts and a time into
// bandwidths (see nccl-tests' doc/PERFORMANCE.md).
//
// For a requested size S bytes of an element type of e bytes on N ranks:
//
//   collective     send count   recv count   "count" column  size column
//   allreduce      S/e          S/e          S/e             S
//   reducescatter  N*c          c = S/e/N    c               N*c*e
//   allgather      c = S/e/N    N*c          c               N*c*e
//   broadcast      S/e          S/e          S/e             S
//
// algbw = size / time, and busbw = algbw * BusBandwidthFactor: the bytes
// each rank's link carries relative to the size, so that busbw can be
// compared with the hardware's peak whatever N is.
#ifndef GRADSYNC_CLI_BENCH_COLLECTIVE_H_
#define GRADSYNC_CLI_BENCH_COLLECTIVE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collectives/communicator.h"
#include "collectives/types.h"

namespace gradsync {
namespace cli {
namespace bench {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast };

// Accepts "allreduce", "all_reduce", "all-reduce" (and likewise for the
// others). INVALID_ARGUMENT names the accepted spellings.
[[nodiscard]] absl::StatusOr<Collective> ParseCollective(
    absl::string_view name);
// "allreduce", "reducescatter", "allgather", "broadcast".
absl::string_view CollectiveName(Collective collective);

// Whether the collective takes a reduction operator / a root rank.
bool HasReduceOp(Collective collective);
bool HasRoot(Collective collective);

// busbw / algbw: 2(N-1)/N for allreduce, (N-1)/N for reducescatter and
// allgather, 1 for broadcast. 0 when N == 1 except for broadcast.
double BusBandwidthFactor(Collective collective, int ranks);

// algbw in GB/s (1e9 bytes per second) of moving `bytes` in `seconds`;
// 0 when seconds <= 0.
double AlgorithmBandwidth(size_t bytes, double seconds);

// Element counts of one call, per the table above.
struct CollectiveCounts {
  size_t send_count = 0;
  size_t recv_count = 0;
  // The count passed to the Communicator call (and printed).
  size_t param_count = 0;
  // Bytes printed in the size column: max(send, recv) * element size.
  size_t size_bytes = 0;
};
CollectiveCounts CountsForSize(Collective collective, size_t bytes,
                               DataType type, int ranks);

// Where the in-place call's send and receive buffers start inside one
// shared buffer, in elements (NCCL's in-place convention): reducescatter
// receives into block `rank` of its send buffer, allgather sends from
// block `rank` of its receive buffer.
struct InPlaceOffsets {
  size_t send = 0;
  size_t recv = 0;
};
InPlaceOffsets InPlaceOffsetsFor(Collective collective,
                                 const CollectiveCounts& counts, int rank);

// Issues one synchronous call of `collective` on `comm` (op is ignored by
// allgather and broadcast, root by all but broadcast).
[[nodiscard]] absl::Status RunCollective(Communicator* comm,
                                         Collective collective,
                                         const void* send, void* recv,
                                         const CollectiveCounts& counts,
                                         DataType type, ReduceOp op, int root);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_COLLECTIVE_H_
