// The synchronous update policy (update_policy.h): step t is applied once
// every rank committed its gradient for t, as the rank-order mean (or sum)
// of the gradients, block by block, by the thread of the last commit;
// pulls of step t + 1 wait for it.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/ps/shard/update_policy.h"

namespace gradsync {
namespace {

class SyncUpdate final : public UpdatePolicy {
 public:
  [[nodiscard]] absl::StatusOr<int64_t> AdmitLocked(
      ShardCore& core, int rank, int64_t step, absl::Time deadline,
      absl::FunctionRef<absl::Status()> recheck) override {
    return core.SlowestStepLocked(nullptr);
  }

  [[nodiscard]] absl::Status CommitLocked(ShardCore& core, PushedGradient& push,
                                          absl::Time deadline) override;

  [[nodiscard]] absl::Status AwaitPullLocked(ShardCore& core, int rank,
                                             int64_t step,
                                             absl::Time deadline) override;

  [[nodiscard]] absl::Status AwaitStateLocked(ShardCore& core, int64_t step,
                                              absl::Time deadline) override;

  int QueueDepthLocked(const ShardCore& core) const override {
    return core.committed;
  }

 private:
  // Applies the committed gradients' rank-order mean (their sum with
  // config.sum_gradients) to the parameters, block by block while each
  // block of the mean is in L1 (ReduceInBlocks into Optimizer::StepRange):
  // the whole mean is never written out. The caller is the writer; nothing
  // changes on error.
  [[nodiscard]] static absl::Status ApplyMean(
      ShardCore& core, absl::Span<const GradientSegments* const> parts);
};

absl::Status SyncUpdate::CommitLocked(ShardCore& core, PushedGradient& push,
                                      absl::Time deadline) {
  const int rank = push.rank;
  RankSlot& slot = core.ranks[static_cast<size_t>(rank)];
  // Checked again: ranks that began together may disagree.
  RETURN_IF_ERROR(core.decider.CheckScalars(core.Describe(), core.committed,
                                            rank, push.step,
                                            push.options.scalars.size()));
  const bool last = core.committed + 1 == core.config.num_workers;
  // The last rank applies the step; it needs the parameters to itself.
  if (last)
    RETURN_IF_ERROR(core.BeginWriteLocked(deadline, "applying the step"));
  const absl::Time now = absl::Now();
  if (core.committed == 0) core.first_commit = now;
  core.decider.NoteSyncCommit(rank, core.committed == 0,
                              std::move(push.options.scalars),
                              push.options.switch_epoch);
  slot.committed = true;
  slot.learning_rate = push.options.learning_rate;
  slot.next_step = core.version + 1;
  slot.segments = std::move(push.segments);
  slot.holds = std::move(push.holds);
  ++core.committed;
  ++core.stats.pushes;
  core.stats.max_queue_depth =
      std::max(core.stats.max_queue_depth, core.committed);
  core.RecordLocked(rank, core.version, slot.accepted_slowest);
  if (!last) return absl::OkStatus();

  core.stats.last_wait_last_worker = now - core.first_commit;
  core.stats.wait_last_worker += core.stats.last_wait_last_worker;
  std::vector<const GradientSegments*> parts;
  for (const RankSlot& r : core.ranks) parts.push_back(&r.segments);
  std::vector<double> scalar_sums = core.decider.SumScalars();
  // Rank 0's learning rate, if it sent one (validated when the push
  // began, so this cannot fail).
  if (const double lr = core.ranks[0].learning_rate; lr > 0) {
    core.optimizer.SetLearningRate(lr).IgnoreError();
  }
  std::vector<std::vector<std::shared_ptr<const void>>> holds;
  absl::Status status;
  absl::Duration apply;
  core.mu.Unlock();
  {
    // The writer owns the parameters, the optimizer and the committed
    // gradients (no rank can push until the version moves). The mean is
    // made and applied a block at a time, while it is in L1.
    const absl::Time t0 = absl::Now();
    status = ApplyMean(core, parts);
    apply = absl::Now() - t0;
    // Hand the transports' buffers back now, without the lock.
    for (RankSlot& r : core.ranks) {
      holds.push_back(std::move(r.holds));
      r.holds.clear();
      r.segments.clear();
    }
    holds.clear();
  }
  core.mu.Lock();
  core.views.EndWriteLocked();
  core.stats.apply_time += apply;
  for (RankSlot& r : core.ranks) r.committed = false;
  core.committed = 0;
  if (!status.ok()) {
    // The optimizer changed nothing; the ranks may push the step again.
    for (RankSlot& r : core.ranks) r.next_step = core.version;
    return Annotate(status, core.Describe());
  }
  ++core.version;
  ++core.stats.updates;
  core.decider.FinishSyncStep(std::move(scalar_sums), core.version);
  return absl::OkStatus();
}

absl::Status SyncUpdate::ApplyMean(
    ShardCore& core, absl::Span<const GradientSegments* const> parts) {
  // StepRange fails only for a range outside the optimizer's elements;
  // checked once here, so that a step is applied whole or not at all.
  if (core.params.size() != core.optimizer.size()) {
    return absl::InternalError(
        absl::StrCat("the shard holds ", core.params.size(),
                     " parameters but its optimizer ", core.optimizer.size()));
  }
  absl::Mutex mu;
  absl::Status first_error;
  ReduceInBlocks(
      parts, /*average=*/!core.config.sum_gradients, core.size(),
      core.config.compute.get(),
      [&](size_t begin, absl::Span<const float> mean) {
        absl::Status status = core.optimizer.StepRange(
            begin, absl::MakeSpan(core.params).subspan(begin, mean.size()),
            mean);
        if (!status.ok()) {
          absl::MutexLock lock(&mu);
          first_error.Update(status);
        } else if (!core.wire_params.empty()) {
          // A 16-bit job: round the block once, while in L1.
          RoundForWire(
              core.config.wire_dtype,
              absl::MakeConstSpan(core.params).subspan(begin, mean.size()),
              core.wire_params.data() + begin);
        }
      },
      core.config.wire_dtype);
  RETURN_IF_ERROR(first_error);
  core.optimizer.EndStep();
  return absl::OkStatus();
}

absl::Status SyncUpdate::AwaitPullLocked(ShardCore& core, int rank,
                                         int64_t step, absl::Time deadline) {
  const RankSlot& slot = core.ranks[static_cast<size_t>(rank)];
  if (step > core.version + 1 ||
      (step == core.version + 1 && !slot.committed && !slot.pushing)) {
    return absl::FailedPreconditionError(absl::StrCat(
        core.Describe(), ": rank ", rank, " asked for the parameters of step ",
        step, ", but the shard is at step ", core.version,
        " and the rank has not pushed it"));
  }
  auto ready = [&core, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    return core.life == ShardLife::kReleased ||
           (core.version >= step && !core.views.writing());
  };
  if (!core.mu.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat(core.Describe(), ": rank ", rank, "'s pull of step ", step,
                     " timed out: step ", core.version, " is not applied; ",
                     core.MissingRanksLocked(), "; look at those workers"));
  }
  RETURN_IF_ERROR(core.CheckServingLocked());
  if (core.version > step) {
    return absl::FailedPreconditionError(
        absl::StrCat(core.Describe(), ": the parameters of step ", step,
                     " were already replaced by step ", core.version, "'s"));
  }
  return absl::OkStatus();
}

absl::Status SyncUpdate::AwaitStateLocked(ShardCore& core, int64_t step,
                                          absl::Time deadline) {
  if (core.committed > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        core.Describe(), ": cannot hand over the state in the middle of step ",
        core.version, ": ", core.MissingRanksLocked(),
        "; switch modes at a step boundary"));
  }
  if (step > 0 && core.version != step) {
    return absl::FailedPreconditionError(
        absl::StrCat(core.Describe(), ": the state of step ", step,
                     " was asked for, but the shard is at step ", core.version,
                     "; fetch it at the step the ranks switch at"));
  }
  auto ready = [&core]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    return core.life == ShardLife::kReleased || !core.views.writing();
  };
  if (!core.mu.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        core.Describe(), ": fetching the state timed out behind an update"));
  }
  return core.CheckServingLocked();
}

}  // namespace

std::unique_ptr<UpdatePolicy> NewSyncUpdate() {
  return std::make_unique<SyncUpdate>();
}

}  // namespace gradsync
