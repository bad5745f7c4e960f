// Ring algorithms of the TCP backend: the bandwidth-optimal all-reduce,
// reduce-scatter and all-gather, and a pipelined chain broadcast.
// See ring.cc for the algorithm, step by step.
#ifndef GRADSYNC_COLLECTIVES_ALGORITHMS_RING_H_
#define GRADSYNC_COLLECTIVES_ALGORITHMS_RING_H_

#include <cstddef>

#include "absl/status/status.h"
#include "collectives/algorithms/collective_context.h"

namespace gradsync {

[[nodiscard]] absl::Status RingAllReduce(CollectiveContext& ctx,
                                         const void* send, void* recv,
                                         size_t count);
[[nodiscard]] absl::Status RingReduceScatter(CollectiveContext& ctx,
                                             const void* send, void* recv,
                                             size_t recv_count);
[[nodiscard]] absl::Status RingAllGather(CollectiveContext& ctx,
                                         const void* send, void* recv,
                                         size_t send_count);
[[nodiscard]] absl::Status ChainBroadcast(CollectiveContext& ctx,
                                          const void* send, void* recv,
                                          size_t count, int root);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALGORITHMS_RING_H_
