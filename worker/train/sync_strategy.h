// GradientSync: how a rank's gradients become the step's update, the
// strategy half of the step loop (docs/architecture.md, "The step loop"). The
// ring strategy (ring_sync.h) all-reduces buckets among the ranks and lets
// every rank run the optimizer locally; the parameter-server strategy pushes
// buckets to the shards and pulls fresh parameters (the optimizer runs at
// the PS).
//
// One step, on the rank's thread:
//   RETURN_IF_ERROR(sync.BeginStep(step, heard_switch_epoch));
//   // The LAST micro-batch's backward reports ranges as they are final:
//   opts.on_grad_ready = [&](size_t b, size_t e) { sync.OnGradReady(b, e); };
//   ... forward/backward ...
//   double scalars[] = {local_loss_sum, local_correct, local_count};
//   ASSIGN_OR_RETURN(SyncStats stats, sync.FinishStep(scalars, deadline));
//   if (sync.optimizer_runs_locally()) optimizer.Step(params, grads);
// Earlier micro-batches of a step accumulate gradients without reporting
// them (DDP's no_sync): only the last pass triggers communication.
//
// OnGradReady may start communication at once, so that it overlaps the
// rest of backward; the gradient range must then stay untouched until
// FinishStep returns (gradient_ready.h). It cannot fail: a strategy keeps
// the first error and returns it from FinishStep.
//
// Errors: FinishStep returns the communication error of the step, which
// names the operation (e.g. "allreduce of bucket 2 of 5, elements [a, b)")
// and the peer rank when the backend knows it; DEADLINE_EXCEEDED when the
// deadline passed first; ABORTED after Abort.
// Switch agreement (proto/coordinator.proto, "Switching a running job"):
// BeginStep takes the newest runtime switch request this rank has heard
// of; the step's synchronisation carries it to the other ranks (ring: in
// the scalar all-reduce; PS: in the push to shard 0), and FinishStep
// returns the decision every rank of the step sees identically: the
// newest epoch reported and the step at whose start the ranks act on it.
//
// Threading: a strategy is driven by one rank's thread; only Abort may be
// called from another thread (to unblock a cancelled rank).
#ifndef GRADSYNC_WORKER_TRAIN_SYNC_STRATEGY_H_
#define GRADSYNC_WORKER_TRAIN_SYNC_STRATEGY_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace gradsync {

// What one step's synchronisation cost this rank.
struct SyncStats {
  // Time FinishStep blocked: communication not hidden behind backward.
  absl::Duration exposed = absl::ZeroDuration();
  // Payload bytes this rank sent and received for the step.
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  // Collectives (or pushes) issued for the step.
  int64_t operations = 0;
  // For the step's algbw and busbw (study/alpha_beta/sync_bandwidth.h): S, the
  // gradient bytes this rank synchronised; how long the synchronisation
  // was busy (zero when it could not be read): the sum of the
  // bucket collectives' own durations (ring, Work::Elapsed), or how long
  // at least one shard stream had bytes to move or awaited its reply (PS,
  // not counting waits for backward's next bucket); and busbw / algbw.
  // Both include waiting for slower ranks, which neither path can tell
  // apart from link time (nor can nccl-tests).
  int64_t payload_bytes = 0;
  absl::Duration busy = absl::ZeroDuration();
  double bus_factor = 0.0;
  // The switch decision after this step (0, 0: none yet). Identical on
  // every rank that receives it; see the top comment.
  int64_t switch_epoch = 0;
  int64_t switch_step = 0;
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;

  // "ring" or "ps": for logs and metrics.
  virtual absl::string_view name() const = 0;

  // Prepares the synchronising backward pass of `step` (resets bucket
  // readiness); `switch_epoch` is the newest runtime switch request this
  // rank has heard of (0: none). FAILED_PRECONDITION if the previous step
  // was not finished.
  [[nodiscard]] virtual absl::Status BeginStep(int64_t step,
                                               int64_t switch_epoch) = 0;

  // Gradient elements [begin, end) are final for this step.
  virtual void OnGradReady(size_t begin, size_t end) = 0;

  // Waits (until `deadline`) for the step's communication, and sums
  // `scalars` (small per-rank statistics such as the loss numerator)
  // across ranks in place, identically on every rank. After it returns OK
  // the gradient buffer holds the global gradient (ring) or the parameters
  // are fresh (PS).
  [[nodiscard]] virtual absl::StatusOr<SyncStats> FinishStep(
      absl::Span<double> scalars, absl::Time deadline) = 0;

  // True when every rank must apply the optimizer to the synchronised
  // gradient itself (ring); false when the update happened remotely (PS).
  virtual bool optimizer_runs_locally() const = 0;

  // Sums `values` across ranks in place, outside a step (evaluation).
  [[nodiscard]] virtual absl::Status AllReduceScalars(absl::Span<double> values,
                                                      absl::Time deadline) = 0;

  // Makes pending and later calls fail with ABORTED quoting `reason`, and
  // unblocks the peers. Thread-safe.
  virtual void Abort(const absl::Status& reason) = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_SYNC_STRATEGY_H_
