// Test helpers: N TCP-communicator ranks as threads over a MemoryStore, and
// the exact results of the verifiable inputs (collectives/verifiable.h).
#ifndef GRADSYNC_TESTS_COLLECTIVES_RANK_GROUP_H_
#define GRADSYNC_TESTS_COLLECTIVES_RANK_GROUP_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "collectives/communicator.h"
#include "collectives/memory_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "collectives/verifiable.h"

namespace gradsync::testing {

// Options that exercise pipelining with small data: tiny segments and
// sub-blocks, short timeouts; TCP for every pair (Transport::kTcp).
TcpOptions SmallPipelineOptions();

class RankGroup {
 public:
  // Connects `size` ranks (threads); fails the test on error.
  RankGroup(int size, const TcpOptions& options);
  // The same, with per-rank options (e.g. a host identity per rank).
  RankGroup(int size, const std::function<TcpOptions(int rank)>& options);
  int size() const { return static_cast<int>(comms_.size()); }
  Communicator& comm(int rank) { return *comms_[rank]; }
  // Runs fn(rank) on one thread per rank; returns each rank's status.
  std::vector<absl::Status> Run(const std::function<absl::Status(int)>& fn);

 private:
  MemoryStore store_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

// Writes the exact reduction with `op` over `size` ranks of element i of
// the verifiable inputs (collectives/verifiable.h) to `out`, as `type`.
void ExpectedReduction(DataType type, ReduceOp op, int size, size_t i,
                       void* out);

}  // namespace gradsync::testing

#endif  // GRADSYNC_TESTS_COLLECTIVES_RANK_GROUP_H_
