// PsSweepRunner: what one rank of `gradsync bench allreduce --backend ps`
// does at each size, in lockstep with the other ranks (the PS counterpart
// of runner.h's SweepRunner; ps_options.h says what is measured).
//
// At each size S (count = S / 4 floats):
//   1. rank 0 creates the K shards of job "<run>/S<S>" (balanced ranges,
//      sync, SGD at lr 1, plain sum of the ranks' gradients, zeros) and
//      tells every rank whether that worked;
//   2. `warmup` untimed PushPulls, a barrier, then `iters` timed ones; the
//      time is the maximum over ranks of each rank's average;
//   3. if checking: one more PushPull into parameters poisoned with NaN,
//      and every pulled element is compared with its exact value;
//   4. a barrier (no reply stream still open), and rank 0 releases the
//      shards (also on every error path, so that ranks waiting on them
//      end with ABORTED rather than at their deadline).
//
// The gradient of rank r is FillInput's (r + 1) * P(i) at even steps and
// its negation at odd ones, so the parameters go 0, -sum, 0, -sum, ...:
// every value stays a small integer (exact in float, whatever the number
// of steps), and the checked step, an even one, must pull exactly
// -P(i) * N(N+1)/2, the rank-order sum of the gradients.
//
// The communicator only carries the barriers and the scalars (times,
// wrong counts, rank 0's "shards ready"); the bytes go through PsClient.
//
//   ASSIGN_OR_RETURN(auto runner, PsSweepRunner::Create(comm, config));
//   for (size_t bytes : sizes) ASSIGN_OR_RETURN(SizeResult r,
//                                               runner->RunSize(bytes));
//
// Every rank must call RunSize with the same sizes in the same order.
// Errors: the PS's (naming the shard and its address: UNAVAILABLE for a
// server that cannot be reached, DEADLINE_EXCEEDED naming missing ranks),
// the communicator's, ABORTED on the other ranks when rank 0 could not
// create the shards. Thread-compatible.
#ifndef GRADSYNC_CLI_BENCH_PS_RUNNER_H_
#define GRADSYNC_CLI_BENCH_PS_RUNNER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/bench/report.h"
#include "collectives/communicator.h"

namespace gradsync {
namespace cli {
namespace bench {

struct PsSweepConfig {
  // Prefix of the PS job ids; unique per run (the bench's run id).
  std::string job_id;
  // The address of each shard k; K = its size.
  std::vector<std::string> shard_addresses;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  // The largest size RunSize will be asked for; buffers are sized for it.
  size_t max_bytes = 0;
  // Deadline of every PS call (PsClient and admin calls).
  absl::Duration timeout = absl::Seconds(60);
  // Largest message of the push/pull streams; 0 keeps PsClient's default.
  size_t chunk_bytes = 0;
  // Each server's slice in partitions of this size (PartitionAddresses);
  // 0: one shard per address.
  size_t partition_bytes = 0;
  // TCP congestion control policy of the connections to the shards
  // (common/tcp_congestion.h).
  std::string tcp_congestion = "auto";
  // The steps over the servers' tensor planes (PsClientOptions).
  bool tensor_plane = false;
};

class PsSweepRunner {
 public:
  // Allocates (and touches) the gradient, negated gradient and parameter
  // buffers of max_bytes each. `control` is not owned and must outlive the
  // runner. INVALID_ARGUMENT without shards.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PsSweepRunner>> Create(
      Communicator* control, const PsSweepConfig& config);

  // Measures one size (see above). INVALID_ARGUMENT above max_bytes or
  // below one float per shard.
  [[nodiscard]] absl::StatusOr<SizeResult> RunSize(size_t bytes);

 private:
  PsSweepRunner(Communicator* control, const PsSweepConfig& config);

  // Steps 2 and 3 above on this size's shards.
  [[nodiscard]] absl::StatusOr<PassResult> RunPass(
      const std::string& job, size_t count,
      const std::vector<std::string>& addresses);
  // Creates this size's shards on rank 0 and tells every rank whether
  // that worked; an error on every rank otherwise.
  [[nodiscard]] absl::Status AgreeShardsCreated(
      const absl::Status& rank0_status, size_t bytes);
  // Counts pulled parameters that differ from -sum (NaN included).
  int64_t CountWrong(size_t count) const;
  // All-reduces one double over `control_` (max for times, sum for counts).
  [[nodiscard]] absl::StatusOr<double> AllReduceScalar(double value,
                                                       ReduceOp op);

  Communicator* const control_;
  const PsSweepConfig config_;
  std::vector<float> grads_;
  std::vector<float> negated_;
  std::vector<float> params_;
};

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_PS_RUNNER_H_
