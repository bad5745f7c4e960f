// UpdatePolicy: how a PsShard turns pushed gradients into parameters, one
// implementation per update mode (see "Update modes" in ps_shard.h):
//   sync       (sync_update.cc)   a step is applied once every rank pushed
//              it: the rank-order mean, a block at a time, by the last
//              committer; pulls of the next step wait for it;
//   async/SSP  (async_update.cc)  each gradient is applied as it comes;
//              SSP holds back a push that runs more than `staleness`
//              steps ahead of the slowest rank; a state hand-over first
//              drains every rank's pushes before the switch step.
// PsShard makes the checks every mode makes and calls its policy with the
// core's mutex held; a policy may drop the mutex while it applies an update
// it holds the parameters for (ViewGuard).
//
// Errors: as PsShard's (ps_shard.h, "Errors"); nothing changes when one is
// returned.
#ifndef GRADSYNC_SERVER_PS_SHARD_UPDATE_POLICY_H_
#define GRADSYNC_SERVER_PS_SHARD_UPDATE_POLICY_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/ps/shard/shard_core.h"
#include "server/ps/shard/shard_types.h"

namespace gradsync {

class UpdatePolicy {
 public:
  virtual ~UpdatePolicy() = default;

  // Admits `rank`'s push of `step`, which passed the checks every mode
  // makes (`recheck()` repeats them after a wait). Returns the slowest
  // rank's next step at admission.
  [[nodiscard]] virtual absl::StatusOr<int64_t> AdmitLocked(
      ShardCore& core, int rank, int64_t step, absl::Time deadline,
      absl::FunctionRef<absl::Status()> recheck)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) = 0;

  // Takes a complete gradient from a serving shard.
  [[nodiscard]] virtual absl::Status CommitLocked(ShardCore& core,
                                                  PushedGradient& push,
                                                  absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) = 0;

  // Waits until `rank` may read the parameters of `step`.
  [[nodiscard]] virtual absl::Status AwaitPullLocked(ShardCore& core, int rank,
                                                     int64_t step,
                                                     absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) = 0;

  // Checks, and waits until, the state of `step` (0: the current one) can
  // be handed over (see PsShard::AcquireState).
  [[nodiscard]] virtual absl::Status AwaitStateLocked(ShardCore& core,
                                                      int64_t step,
                                                      absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) = 0;

  // Gradients committed and not applied yet.
  virtual int QueueDepthLocked(const ShardCore& core) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) = 0;
};

// The policy of kSync.
std::unique_ptr<UpdatePolicy> NewSyncUpdate();
// The policy of kAsync and kStaleSync (config.staleness bounds the latter).
std::unique_ptr<UpdatePolicy> NewAsyncUpdate();

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_UPDATE_POLICY_H_
