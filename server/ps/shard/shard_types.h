// The plain types of a parameter-server shard (ps_shard.h): its config and
// update modes, its counters and push records, what a push says besides
// its gradient, and the read-only views Pull and AcquireState hand out.
//
// Pure data; ValidatePsShardConfig is a pure function.
#ifndef GRADSYNC_SERVER_PS_SHARD_SHARD_TYPES_H_
#define GRADSYNC_SERVER_PS_SHARD_SHARD_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/types.h"
#include "common/compute_pool.h"
#include "common/optimizer.h"
#include "server/ps/shard/switch_decider.h"

namespace gradsync {

enum class UpdateMode : uint8_t {
  kSync = 0,
  kAsync = 1,
  kStaleSync = 2,
};

// "sync", "async", "ssp".
const char* UpdateModeName(UpdateMode mode);

struct PsShardConfig {
  std::string job_id;
  int shard = 0;
  size_t begin = 0;  // elements [begin, end) of the flat vector
  size_t end = 0;
  int num_workers = 1;
  OptimizerConfig optimizer;
  UpdateMode mode = UpdateMode::kSync;
  int staleness = 0;            // kStaleSync: the bound s >= 0
  int64_t first_step = 0;       // the step of the first push (>= 0)
  size_t history_limit = 1024;  // PushRecords kept
  // Longest any call waits on this shard; the caller's deadline also
  // applies (the earlier one wins).
  absl::Duration max_wait = absl::Minutes(5);
  // kSync: apply the plain sum of the ranks' gradients instead of their
  // mean (the ranks pre-scaled them, as on the ring).
  bool sum_gradients = false;
  // The gradient wire type, fixed for the shard's life: kFloat32, or
  // kBFloat16 / kFloat16, whose pushes hold 2-byte elements that the shard
  // widens and sums in fp32; the optimizer runs in fp32 on fp32 parameters
  // and state, and pulls get the parameters rounded once to the wire type
  // (ShardView::wire_params), the same bits for every rank. State
  // (AcquireState, ImportState) stays fp32.
  DataType wire_dtype = DataType::kFloat32;
  // Threads that share a synchronous step's sum and optimizer update with
  // the thread that applies it (shared by the shards of a server); null:
  // that thread alone.
  // Not part of the shard's spec: the server sets it.
  std::shared_ptr<ComputePool> compute;
};

// OK, or INVALID_ARGUMENT naming the first bad field.
[[nodiscard]] absl::Status ValidatePsShardConfig(const PsShardConfig& config);

// One gradient the shard took, in the order it took them.
struct PushRecord {
  int rank = 0;
  int64_t step = 0;
  // The smallest next step over all ranks when the push was accepted: the
  // rank was step - slowest_step steps ahead of the slowest one.
  int64_t slowest_step = 0;
};

struct PsShardStats {
  int64_t version = 0;
  uint64_t bytes_in = 0;   // gradient bytes received (failed pushes too)
  uint64_t bytes_out = 0;  // parameter and state bytes handed out
  uint64_t pushes = 0;     // gradients committed
  uint64_t pulls = 0;      // parameter views handed out
  uint64_t updates = 0;    // optimizer steps
  absl::Duration wait_last_worker;       // sync: first commit -> last
  absl::Duration last_wait_last_worker;  // of the last applied step
  // Applying updates: sync, the rank-order mean of the gradients and the
  // optimizer's update, fused block by block; async, the update.
  absl::Duration apply_time;
  absl::Duration staleness_wait;  // SSP pushes held back
  int staleness_waiters = 0;      // SSP pushes held back now
  int queue_depth = 0;            // committed, not applied yet
  int max_queue_depth = 0;
  std::vector<int64_t> rank_steps;  // each rank's next step
};

// What a push says besides its gradient.
struct PushOptions {
  // The chunks come from the end of the range toward its start (see
  // "Chunk order" above).
  bool descending = false;
  // Step control (see above).
  std::vector<double> scalars;
  int64_t switch_epoch = 0;
  // > 0: the learning rate of this step (sync: rank 0's push decides;
  // async and SSP ignore it); 0: keep the optimizer's.
  double learning_rate = 0;
};

// Read access to the shard's tensors; see "Views" above.
struct ShardView {
  int64_t version = 0;
  absl::Span<const float> params;
  // A 16-bit wire type (PsShardConfig::wire_dtype): `params` rounded to it
  // once, after each update; empty for kFloat32. Pulls send these.
  absl::Span<const uint16_t> wire_params;
  // The bytes a pull sends: wire_params' if any, else params'.
  absl::Span<const char> PullBytes() const {
    if (!wire_params.empty()) {
      return absl::Span<const char>(
          reinterpret_cast<const char*>(wire_params.data()),
          wire_params.size() * sizeof(uint16_t));
    }
    return absl::Span<const char>(reinterpret_cast<const char*>(params.data()),
                                  params.size() * sizeof(float));
  }
  // Pull only: step control (see above).
  std::vector<double> scalar_sums;
  SwitchDecision decision;
  // AcquireState only: the optimizer's state buffers and step count.
  OptimizerKind optimizer_kind = OptimizerKind::kSgd;
  uint64_t optimizer_step = 0;
  std::vector<absl::Span<const float>> state;
};
using ShardViewRef = std::shared_ptr<const ShardView>;

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_SHARD_TYPES_H_
