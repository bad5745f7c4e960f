// SwitchDecider: a PsShard's step control, what its ranks agree on through
// the shard besides the parameters (see "Step control" in ps_shard.h): the
// sums of the step scalars every push carries, and the switch decision
// (epoch E, step S) at whose start every rank acts on switch request E.
//
// kSync: a step's pushes must carry as many scalars as its first one
// (CheckScalars); when the step is applied its scalars are summed in rank
// order and the largest epoch its pushes reported is decided for the next
// step if it is newer (FinishSyncStep).
// kAsync/kStaleSync: a commit reports its epoch (NoteEpoch); the newest
// reported epoch is decided (MaybeDecide) for the step two past the largest
// one pushed, unless a decision is still pending (some rank has not
// committed the step before it); the pull after a commit carries the
// decision as of that commit (SetReply), so every rank sees it in its reply
// to step S - 1 at the latest.
//
// Threading: none of its own; the shard calls it with its mutex held.
#ifndef GRADSYNC_SERVER_PS_SHARD_SWITCH_DECIDER_H_
#define GRADSYNC_SERVER_PS_SHARD_SWITCH_DECIDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// A switch decision: at the start of step `step` every rank acts on the
// switch request numbered `epoch`. (0, 0): none yet.
struct SwitchDecision {
  int64_t epoch = 0;
  int64_t step = 0;
  bool operator==(const SwitchDecision& o) const {
    return epoch == o.epoch && step == o.step;
  }
  bool operator!=(const SwitchDecision& o) const { return !(*this == o); }
};

// What a pull hands a rank besides the parameters.
struct StepControl {
  std::vector<double> scalar_sums;  // kSync only
  SwitchDecision decision;
};

class SwitchDecider {
 public:
  SwitchDecider(bool sync, int num_workers);

  // kSync, while `committed` ranks committed the open step: INVALID_ARGUMENT
  // (naming `shard`) unless `count` scalars match theirs.
  [[nodiscard]] absl::Status CheckScalars(absl::string_view shard,
                                          int committed, int rank, int64_t step,
                                          size_t count) const;
  // kSync: `rank` committed the open step with `scalars` and `epoch`;
  // `first` when it is the step's first commit.
  void NoteSyncCommit(int rank, bool first, std::vector<double> scalars,
                      int64_t epoch);
  // kSync: the rank-order sums of the committed ranks' scalars.
  std::vector<double> SumScalars() const;
  // kSync, after the step before `next_step` was applied with `sums`: the
  // ranks learn the decision in next_step's replies and act on it when
  // they start it.
  void FinishSyncStep(std::vector<double> sums, int64_t next_step);

  // kAsync/kStaleSync: a committed push reported `epoch`.
  void NoteEpoch(int64_t epoch);
  // kAsync/kStaleSync: decides the newest reported epoch if it is newer
  // than the decision and the decision is not pending, i.e. every rank's
  // next step (`slowest_step` the smallest) has reached it; S = the largest
  // step pushed (in flight included) + 2.
  void MaybeDecide(int64_t slowest_step, int64_t largest_pushed_step);
  // kAsync/kStaleSync: `rank`'s next pull carries the current decision.
  void SetReply(int rank);

  // What `rank`'s pull carries.
  StepControl ForPull(int rank) const;
  // A seed replaced the state: the scalar sums and the replies go; the
  // decision and the reported epochs stay (an epoch is decided once).
  void ResetForSeed();
  const SwitchDecision& decision() const { return decision_; }

 private:
  struct RankControl {
    // kSync, committed: the push's scalars and epoch.
    std::vector<double> scalars;
    int64_t switch_epoch = 0;
    // kAsync/kStaleSync: the decision as of the rank's last commit.
    SwitchDecision reply;
    bool has_reply = false;
  };

  const bool sync_;
  std::vector<RankControl> ranks_;
  // kSync: the number of scalars of the open step's pushes and who sent
  // the first, the sums of the last applied step.
  size_t step_scalars_ = 0;
  int step_scalars_rank_ = 0;
  std::vector<double> scalar_sums_;
  SwitchDecision decision_;
  // kAsync/kStaleSync: the newest epoch a commit reported.
  int64_t reported_epoch_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_SWITCH_DECIDER_H_
