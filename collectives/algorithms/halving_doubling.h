// Recursive halving-doubling all-reduce (Rabenseifner): the latency-optimal
// algorithm the TCP backend uses for small messages. See the .cc.
#ifndef GRADSYNC_COLLECTIVES_ALGORITHMS_HALVING_DOUBLING_H_
#define GRADSYNC_COLLECTIVES_ALGORITHMS_HALVING_DOUBLING_H_

#include <cstddef>

#include "absl/status/status.h"
#include "collectives/algorithms/collective_context.h"

namespace gradsync {

[[nodiscard]] absl::Status HalvingDoublingAllReduce(CollectiveContext& ctx,
                                                    const void* send,
                                                    void* recv, size_t count);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALGORITHMS_HALVING_DOUBLING_H_
