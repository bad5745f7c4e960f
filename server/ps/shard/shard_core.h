// ShardCore: the state a PsShard and its update policy (update_policy.h)
// share, and the checks both make on it. PsShard (ps_shard.h) is the
// public face: it validates calls, takes `mu` and hands the mode-specific
// work to the policy, which reads and changes the core under the same
// lock.
//
// Locking: `mu` guards everything but the parameters and the optimizer,
// which belong to whoever ViewGuard `views` lets write (one writer, no
// readers) and are read through views otherwise; the writer may drop `mu`
// while it computes. Lock order: mu only.
#ifndef GRADSYNC_SERVER_PS_SHARD_SHARD_CORE_H_
#define GRADSYNC_SERVER_PS_SHARD_SHARD_CORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/optimizer.h"
#include "server/ps/shard/gradient_sum.h"
#include "server/ps/shard/shard_types.h"
#include "server/ps/shard/switch_decider.h"
#include "server/ps/shard/view_guard.h"

namespace gradsync {

// Shard states (ImportState seeds; Release ends):
//
//   kAwaitingSeed --ImportState--> kServing --Release--> kReleased
//         \______________________Release_______________________/
enum class ShardLife { kAwaitingSeed, kServing, kReleased };

// One rank's place in the shard.
struct RankSlot {
  int64_t next_step = 0;         // the step this rank pushes next
  bool pushing = false;          // a Push owns `staging`
  bool committed = false;        // kSync: gradient for version is in
  double learning_rate = 0;      // kSync, committed: its push's (> 0: set)
  int64_t accepted_slowest = 0;  // SlowestStepLocked() at BeginPush
  std::unique_ptr<float[]> staging;
  // kSync, committed: the gradient's bytes and what keeps them valid.
  GradientSegments segments;
  std::vector<std::shared_ptr<const void>> holds;
};

// A complete gradient, as Commit hands it to the policy.
struct PushedGradient {
  int rank = 0;
  int64_t step = 0;
  char* data = nullptr;  // the rank's staging buffer
  size_t size_bytes = 0;
  // Where the gradient's bytes are, in order.
  GradientSegments segments;
  std::vector<std::shared_ptr<const void>> holds;
  PushOptions options;
};

struct ShardCore {
  ShardCore(const PsShardConfig& shard_config, Optimizer shard_optimizer,
            std::vector<float> initial_params, ShardLife initial_life);

  size_t size() const { return config.end - config.begin; }
  // "ps shard K of job 'J'", for messages.
  std::string Describe() const;
  // The earlier of `deadline` and now + config.max_wait.
  absl::Time CapDeadline(absl::Time deadline) const;

  // OK while serving; FAILED_PRECONDITION awaiting the seed; ABORTED once
  // released.
  [[nodiscard]] absl::Status CheckServingLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // OK when `rank` may push `step` now (see ps_shard.h, "Errors").
  [[nodiscard]] absl::Status CheckPushLocked(int rank, int64_t step) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The smallest next step over the ranks (and which rank has it).
  int64_t SlowestStepLocked(int* slowest_rank) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The largest step a push was begun for (in flight or committed).
  int64_t LargestPushedStepLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // kSync: "ranks 2, 3 have not pushed it (ranks 0, 1 have)".
  std::string MissingRanksLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void RecordLocked(int rank, int64_t step, int64_t slowest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Takes the parameters to write (ViewGuard), `what` naming the writer;
  // ABORTED once released.
  [[nodiscard]] absl::Status BeginWriteLocked(absl::Time deadline,
                                              const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  const PsShardConfig config;

  mutable absl::Mutex mu;
  ShardLife life ABSL_GUARDED_BY(mu);
  // kSync: the step whose gradients are being gathered, and the step the
  // parameters are for. Else first_step + updates applied.
  int64_t version ABSL_GUARDED_BY(mu);
  std::vector<RankSlot> ranks ABSL_GUARDED_BY(mu);
  int committed ABSL_GUARDED_BY(mu) = 0;  // kSync: ranks in for version
  int appliers ABSL_GUARDED_BY(mu) = 0;   // async: commits not applied
  absl::Time first_commit ABSL_GUARDED_BY(mu);
  PsShardStats stats ABSL_GUARDED_BY(mu);
  std::deque<PushRecord> history ABSL_GUARDED_BY(mu);
  SwitchDecider decider ABSL_GUARDED_BY(mu);
  ViewGuard views{&mu};
  std::atomic<uint64_t> bytes_in{0};

  // Rounds params into wire_params (16-bit wire types; nothing for fp32).
  // The caller is the writer `views` admits.
  void RoundParamsForWire();

  // Written only by the writer `views` admits; read through views.
  std::vector<float> params;
  // 16-bit wire types: params rounded once, what every pull sends.
  std::vector<uint16_t> wire_params;
  Optimizer optimizer;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_SHARD_CORE_H_
