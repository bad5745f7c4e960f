// PsShard: one parameter-server shard of a job, with no gRPC inside. It owns
// the elements [begin, end) of the job's flat fp32 parameter vector, the
// optimizer over that slice (common/optimizer.h, the code the ranks run in
// ring mode) and one gradient staging buffer per rank.
//
// A rank's step on the shard is Push then Pull:
//   PushOptions options;             // step control, chunk order
//   options.scalars = {loss_sum};
//   options.switch_epoch = newest_switch_request;
//   ASSIGN_OR_RETURN(PsShard::Push push,
//                    shard->BeginPush(rank, t, deadline, options));
//   ... fill push.unfilled() in order (recv() into it or Append) ...
//   RETURN_IF_ERROR(shard->Commit(std::move(push), deadline));
//   ASSIGN_OR_RETURN(ShardViewRef view, shard->Pull(rank, t + 1, deadline));
//   ... send view->params, view->scalar_sums, view->decision; drop the
//   view when the bytes are gone ...
//
// Chunk order: a push is filled from the start of the shard's range toward
// its end (the default), or, with PushOptions::descending, from the end
// toward the start (the order backward finishes gradients). Either way the
// gradient is summed element by element, so the result is bitwise the same.
//
// Update modes:
//   kSync   step t is applied once all N ranks committed their gradient for
//           t: the gradients are summed in rank order (0, 1, ..., N-1, so
//           the result is bitwise the same whatever order they arrived in),
//           divided by N (unless config.sum_gradients) and handed to the
//           optimizer, a block at a time (the mean is never written out);
//           Pull(t + 1) then returns. The committing thread of the last
//           rank does the work, on config.compute's threads too.
//   kAsync  each committed gradient is applied at once, as is (each rank's
//           gradient is already the mean over its local batch); Pull
//           returns the latest parameters without waiting.
//   kStaleSync  as kAsync, but BeginPush of step t waits until every rank
//           has pushed step t - staleness - 1 (stale synchronous parallel:
//           no rank runs more than `staleness` steps ahead of the slowest).
//
// Step control (proto/ps.proto, "Step control"): each push carries a few
// scalars and the newest switch epoch its rank knows of; each view carries
// what the ranks agree on:
//   scalar_sums  kSync: the sums, in rank order, of every rank's scalars
//                of the step that produced the parameters (every rank must
//                send the same number); else empty.
//   decision     (epoch E, step S) at whose start every rank acts on
//                switch request E, or (0, 0). kSync: decided when step t
//                is applied, E = the largest epoch of t's pushes, S = t + 1
//                (only if E is newer than the decided epoch). kAsync,
//                kStaleSync: decided by a commit that reports a newer
//                epoch while no decision is pending, S = (largest step
//                pushed so far, pushes in flight included) + 2; pending
//                until every rank has committed S - 1; newer epochs
//                reported meanwhile are decided (same rule) once it is
//                not. The pull after a commit carries the decision as of
//                that commit, so every rank sees (E, S) in its reply to
//                step S - 1 at the latest, and all see the same one.
//
// Shard states (ImportState seeds; Release ends):
//
//   kAwaitingSeed --ImportState--> kServing --Release--> kReleased
//         \______________________Release_______________________/
//
// Views: Pull, AcquireState hand out ShardViewRef, shared read access to the
// parameters (and optimizer state) that lets a transport send them without
// a copy. The optimizer waits until every view is dropped before it changes
// them (views are short: the time to send one shard's bytes).
//
// Errors (no shard state changes when one is returned):
//   PERMISSION_DENIED    rank outside [0, num_workers)
//   ALREADY_EXISTS       the rank already pushed this step, or is pushing it
//   FAILED_PRECONDITION  a step the shard is not at (sync: not the current
//                        step; async: not the rank's next step); the shard
//                        awaits its seed; parameters of a step that was
//                        already replaced; a state change in mid-step
//   INVALID_ARGUMENT     more bytes than the shard's gradient, a commit of
//                        an incomplete gradient, a snapshot of the wrong
//                        size or optimizer kind, a rank sending another
//                        number of step scalars than the others (kSync)
//   DEADLINE_EXCEEDED    a wait ran out; the message names the ranks that
//                        did not push (sync) or the slow rank (SSP)
//   ABORTED              the shard was released
//
// Structure: PsShard validates each call and takes the core's lock
// (shard_core.h); the update mode's UpdatePolicy (update_policy.h) does
// the mode-specific work, SwitchDecider (switch_decider.h) the step
// control, and ViewGuard (view_guard.h) the readers/writer protocol of
// views.
//
// Lock order: the core's mutex only. Threading: thread-safe; a Push belongs
// to the thread that filled it. Memory: params, optimizer state (0-2 buffers)
// and, per rank, a staging buffer of the shard's size (its pages are only
// touched when a transport receives into it) or the transport's buffers that an
// AppendExternal push holds until its step is applied.
#ifndef GRADSYNC_SERVER_PS_SHARD_PS_SHARD_H_
#define GRADSYNC_SERVER_PS_SHARD_PS_SHARD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/model_init/parameter_state.h"
#include "common/optimizer.h"
#include "server/ps/shard/gradient_sum.h"
#include "server/ps/shard/shard_core.h"
#include "server/ps/shard/shard_push.h"
#include "server/ps/shard/shard_types.h"
#include "server/ps/shard/switch_decider.h"
#include "server/ps/shard/update_policy.h"

namespace gradsync {

class PsShard : public std::enable_shared_from_this<PsShard> {
 public:
  // A shard serving `params` (end - begin floats) from config.first_step.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<PsShard>> Create(
      const PsShardConfig& config, std::vector<float> params);
  // A shard that waits for ImportState before it takes pushes.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<PsShard>>
  CreateAwaitingSeed(const PsShardConfig& config);

  PsShard(const PsShard&) = delete;
  PsShard& operator=(const PsShard&) = delete;
  ~PsShard();

  // One rank's gradient for one step, being received (shard_push.h).
  using Push = ShardPush;

  // Starts rank `rank`'s push of step `step`. kStaleSync waits (until
  // `deadline` or config.max_wait) while the rank is more than `staleness`
  // steps ahead of the slowest rank. kSync: INVALID_ARGUMENT if
  // options.scalars has another length than the scalars of the ranks that
  // committed the step already.
  [[nodiscard]] absl::StatusOr<Push> BeginPush(
      int rank, int64_t step, absl::Time deadline,
      PushOptions options = PushOptions());

  // Takes a completely filled push. kSync: the last rank's commit of a
  // step sums, averages and applies it; kAsync/kStaleSync: applies this
  // gradient. Waits for outstanding views (until `deadline`); on error the
  // push is abandoned and nothing changes (INVALID_ARGUMENT for scalars as
  // in BeginPush).
  [[nodiscard]] absl::Status Commit(Push push, absl::Time deadline);

  // The parameters for step `step` (sync: waits until step - 1 is applied;
  // FAILED_PRECONDITION if they were already replaced by a later step).
  // kAsync/kStaleSync: the latest parameters, at once. DEADLINE_EXCEEDED
  // names the ranks that have not pushed step - 1. The view carries the
  // step control (see above).
  [[nodiscard]] absl::StatusOr<ShardViewRef> Pull(int rank, int64_t step,
                                                  absl::Time deadline);

  // Parameters plus optimizer state, for a switch to ring mode. kSync:
  // FAILED_PRECONDITION while some ranks pushed the current step but
  // others did not (switches happen at step boundaries), or if `step` > 0
  // and the shard is not at `step`. kAsync/kStaleSync with `step` > 0:
  // first waits (until `deadline`) until every rank has committed every
  // step before `step` and no push is in flight (DEADLINE_EXCEEDED names
  // the ranks behind); FAILED_PRECONDITION if a rank pushed `step` or
  // later already. The view's version is then `step`.
  [[nodiscard]] absl::StatusOr<ShardViewRef> AcquireState(absl::Time deadline,
                                                          int64_t step = 0);
  // A copy of what AcquireState shows.
  [[nodiscard]] absl::StatusOr<ParameterState> ExportState(absl::Time deadline,
                                                           int64_t step = 0);
  // Replaces parameters, optimizer state and step (a switch to PS mode, or
  // the seed of a shard created awaiting it); every rank's next step
  // becomes state.step. FAILED_PRECONDITION while pushes are in progress
  // or committed; INVALID_ARGUMENT for sizes or kind that do not match.
  [[nodiscard]] absl::Status ImportState(ParameterState state,
                                         absl::Time deadline);

  // Ends the shard: waiting calls return ABORTED, later calls too.
  void Release();

  const PsShardConfig& config() const { return core_.config; }
  size_t size() const { return core_.size(); }
  PsShardStats Stats() const;
  // The current switch decision (see "Step control").
  SwitchDecision decision() const;
  // The newest config.history_limit PushRecords, oldest first.
  std::vector<PushRecord> History() const;

 private:
  friend class ShardPush;

  PsShard(const PsShardConfig& config, Optimizer optimizer,
          std::vector<float> params, ShardLife life);

  // Drops a push that was not committed.
  void Abandon(int rank);
  // A view whose version is `version`; `pull_rank` >= 0 adds that rank's
  // step control.
  ShardViewRef MakeViewLocked(bool with_state, int64_t version, int pull_rank)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_.mu);
  // PERMISSION_DENIED unless `rank` is one of the job's.
  [[nodiscard]] absl::Status CheckRank(int rank) const;

  ShardCore core_;
  const std::unique_ptr<UpdatePolicy> policy_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_PS_SHARD_H_
