// Test helpers: N TCP-communicator ranks as threads over a MemoryStore, and
// exact, verifiable inputs (small integers, exact in every data type).
#ifndef GRADSYNC_TESTS_COLLECTIVES_RANK_GROUP_H_
#define GRADSYNC_TESTS_COLLECTIVES_RANK_GROUP_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "collectives/communicator.h"
#include "collectives/memory_store.h"
#include "collectives/tcp/tcp_communicator.h"

namespace gradsync::testing {

// Options that exercise pipelining with small data: tiny segments and
// sub-blocks, short timeouts.
TcpOptions SmallPipelineOptions();

class RankGroup {
 public:
  // Connects `size` ranks (threads); fails the test on error.
  RankGroup(int size, const TcpOptions& options);
  int size() const { return static_cast<int>(comms_.size()); }
  Communicator& comm(int rank) { return *comms_[rank]; }
  // Runs fn(rank) on one thread per rank; returns each rank's status.
  std::vector<absl::Status> Run(const std::function<absl::Status(int)>& fn);

 private:
  MemoryStore store_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

// Value of element i on rank r: a small signed integer.
int InputValue(int rank, size_t i);

// Fills `count` elements of `type` at `buf` with InputValue(rank, i + offset).
void FillInput(DataType type, void* buf, size_t count, int rank,
               size_t offset = 0);

// The exact result of reducing InputValue over `size` ranks with `op`, for
// element i, converted to `type` and written to `out`.
void ExpectedReduction(DataType type, ReduceOp op, int size, size_t i,
                       void* out);

}  // namespace gradsync::testing

#endif  // GRADSYNC_TESTS_COLLECTIVES_RANK_GROUP_H_
