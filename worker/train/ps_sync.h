// PsSync: the parameter-server strategy (GradientSync over a PsClient). As
// backward reports gradient ranges, the rank's push to every shard streams
// them at once (server/ps/client/ps_client.h, PsStep: each shard's stream sends
// its range from the end toward the start, the order backward finishes
// it), so the push overlaps the rest of backward as the ring's bucket
// all-reduces do; FinishStep waits for every shard's reply, which carries
// the parameters of the next step (sync) or the latest ones (async, SSP)
// straight into the rank's parameter buffer. The optimizer runs on the
// shards, never on the rank.
//
// Gradient scaling matches the ring: in sync mode the shards apply the
// plain rank-order SUM of the pushes (created with sum_gradients), each
// rank's gradient being scaled by the GLOBAL batch (ring_sync.h), so both
// paths apply the same update. In async and SSP modes every push is
// applied alone, so each rank scales its gradient by its own share
// (the trainer does that) and the step's scalars stay local.
//
// Step control: the switch epoch this rank heard of rides in its push
// headers; the decision comes back in shard 0's reply (proto/ps.proto,
// "Step control"). In sync mode the step's scalars (the loss numerator,
// known once backward is over) follow shard 0's gradient in a trailer and
// come back summed in rank order in its reply, so a step needs no other
// message between the ranks; evaluation's sums use the job's communicator.
//
// Bytes: a push+pull of S bytes sends S and receives S bytes per rank.
//
// Errors: as GradientSync; the PS's errors name the shard and its address
// (e.g. "PS shard 1 at 127.0.0.1:40123: UNAVAILABLE ..."), quoted with the
// step. Threading: as GradientSync (Abort from any thread).
#ifndef GRADSYNC_WORKER_TRAIN_PS_SYNC_H_
#define GRADSYNC_WORKER_TRAIN_PS_SYNC_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "server/ps/client/ps_client.h"
#include "worker/train/sync_strategy.h"
#include "worker/train/train_config.h"

namespace gradsync {

class PsSync final : public GradientSync {
 public:
  // `grads` and `params` are the rank's flat buffers (same length as the
  // client's vector); `comm` sums evaluation's scalars. Every FinishStep
  // passes `step_scalars` scalars (sync mode: the shards sum them; a step
  // with another count fails with INVALID_ARGUMENT). INVALID_ARGUMENT for
  // null pointers or mismatched lengths.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PsSync>> Create(
      std::unique_ptr<PsClient> client, Communicator* comm,
      absl::Span<const float> grads, absl::Span<float> params, PsUpdate update,
      size_t step_scalars = 0);

  ~PsSync() override;

  absl::string_view name() const override { return "ps"; }
  [[nodiscard]] absl::Status BeginStep(int64_t step,
                                       int64_t switch_epoch) override;
  void OnGradReady(size_t begin, size_t end) override;
  [[nodiscard]] absl::StatusOr<SyncStats> FinishStep(
      absl::Span<double> scalars, absl::Time deadline) override;
  bool optimizer_runs_locally() const override { return false; }
  [[nodiscard]] absl::Status AllReduceScalars(absl::Span<double> values,
                                              absl::Time deadline) override;
  void Abort(const absl::Status& reason) override;

  PsClient& client() { return *client_; }
  const PsClient& client() const { return *client_; }
  PsUpdate update() const { return update_; }

 private:
  PsSync(std::unique_ptr<PsClient> client, Communicator* comm,
         absl::Span<const float> grads, absl::Span<float> params,
         PsUpdate update, size_t step_scalars);

  const std::unique_ptr<PsClient> client_;
  Communicator* const comm_;
  const absl::Span<const float> grads_;
  const absl::Span<float> params_;
  const PsUpdate update_;
  const size_t step_scalars_;

  int64_t step_ = -1;
  int64_t switch_epoch_ = 0;
  bool in_step_ = false;
  absl::Time started_;
  // First error of OnGradReady in the current step.
  absl::Status error_;

  // The step in flight; Abort reaches it from another thread.
  absl::Mutex mu_;
  std::unique_ptr<PsStep> push_ ABSL_GUARDED_BY(mu_);
  absl::Status aborted_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_PS_SYNC_H_
