// SweepRunner: what one rank does at each size of `gradsync bench`, in
// lockstep with the other ranks (nccl-tests' BenchTime, without globals).
//
// At each size, twice (out-of-place, then in-place on one buffer):
//   1. fill the input with verifiable values (verifiable.h);
//   2. out-of-place only: `warmup` untimed calls;
//   3. Barrier, then time `iters` calls; the pass's time is the maximum
//      over ranks of each rank's average (an all-reduce with max), since
//      a collective is as slow as its slowest rank;
//   4. if checking: refill (in-place calls overwrote the input), poison
//      the output, make one more call, count wrong elements, and sum the
//      count over ranks.
//
//   ASSIGN_OR_RETURN(auto runner, SweepRunner::Create(comm, memory, config));
//   for (size_t bytes : sizes) ASSIGN_OR_RETURN(SizeResult r,
//                                               runner->RunSize(bytes));
//
// Every rank must call RunSize with the same sizes in the same order.
// Errors are the communicator's (DEADLINE_EXCEEDED naming a rank, ...) or
// the memory's. Thread-compatible.
#ifndef GRADSYNC_CLI_BENCH_RUNNER_H_
#define GRADSYNC_CLI_BENCH_RUNNER_H_

#include <cstddef>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/bench/bench_memory.h"
#include "cli/bench/collective.h"
#include "cli/bench/report.h"
#include "collectives/communicator.h"
#include "collectives/types.h"

namespace gradsync {
namespace cli {
namespace bench {

struct SweepConfig {
  Collective collective = Collective::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  // VerifySpec::tolerance: 0 (exact) unless the backend pre-scales avg.
  double tolerance = 0.0;
  // The largest size RunSize will be asked for; buffers are sized for it.
  size_t max_bytes = 0;
};

// The timed part of a pass, shared with the PS runner: `warmup` untimed
// calls of `call`, a barrier on `comm`, then `iters` timed calls. Returns
// this rank's average seconds per timed call, or the first error.
[[nodiscard]] absl::StatusOr<double> TimeCalls(
    Communicator* comm, int warmup, int iters,
    absl::FunctionRef<absl::Status()> call);

class SweepRunner {
 public:
  // Allocates the send, receive and scalar buffers from `memory`. Neither
  // `comm` nor `memory` is owned; both must outlive the runner.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SweepRunner>> Create(
      Communicator* comm, BenchMemory* memory, const SweepConfig& config);

  // Measures one size (see above). INVALID_ARGUMENT above max_bytes.
  [[nodiscard]] absl::StatusOr<SizeResult> RunSize(size_t bytes);

 private:
  SweepRunner(Communicator* comm, const SweepConfig& config);

  [[nodiscard]] absl::StatusOr<PassResult> RunPass(
      const CollectiveCounts& counts, bool in_place);
  // Fills the pass's input region and copies it to the device.
  [[nodiscard]] absl::Status FillInputRegion(BenchBuffer* in, size_t in_offset,
                                             const CollectiveCounts& counts);
  // Makes the checked call and returns the rank's wrong-element count.
  [[nodiscard]] absl::StatusOr<int64_t> CheckedCall(
      BenchBuffer* in, size_t in_offset, BenchBuffer* out, size_t out_offset,
      const CollectiveCounts& counts, bool in_place);
  // All-reduces one double (time with max, wrong counts with sum).
  [[nodiscard]] absl::StatusOr<double> AllReduceScalar(double value,
                                                       ReduceOp op);

  Communicator* const comm_;
  const SweepConfig config_;
  const size_t element_bytes_;
  std::unique_ptr<BenchBuffer> send_;
  std::unique_ptr<BenchBuffer> recv_;  // also the in-place buffer
  std::unique_ptr<BenchBuffer> scalar_;
};

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_RUNNER_H_
