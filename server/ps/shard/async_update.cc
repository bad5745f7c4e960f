// The asynchronous update policies (update_policy.h): kAsync applies each
// committed gradient at once, as it is; kStaleSync does the same but holds
// back a push of step t until every rank has pushed t - staleness - 1
// (stale synchronous parallel). A state hand-over for step S first drains
// every rank's pushes before S.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "server/ps/shard/update_policy.h"

namespace gradsync {
namespace {

class AsyncUpdate final : public UpdatePolicy {
 public:
  [[nodiscard]] absl::StatusOr<int64_t> AdmitLocked(
      ShardCore& core, int rank, int64_t step, absl::Time deadline,
      absl::FunctionRef<absl::Status()> recheck) override;

  [[nodiscard]] absl::Status CommitLocked(ShardCore& core, PushedGradient& push,
                                          absl::Time deadline) override;

  [[nodiscard]] absl::Status AwaitPullLocked(ShardCore& core, int rank,
                                             int64_t step,
                                             absl::Time deadline) override;

  [[nodiscard]] absl::Status AwaitStateLocked(ShardCore& core, int64_t step,
                                              absl::Time deadline) override;

  int QueueDepthLocked(const ShardCore& core) const override {
    return core.appliers;
  }

 private:
  // Ranks behind `step` or pushing, for the errors of a drain.
  static std::string DrainProgressLocked(const ShardCore& core, int64_t step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu);
};

absl::StatusOr<int64_t> AsyncUpdate::AdmitLocked(
    ShardCore& core, int rank, int64_t step, absl::Time deadline,
    absl::FunctionRef<absl::Status()> recheck) {
  int slowest_rank = 0;
  int64_t slowest = core.SlowestStepLocked(&slowest_rank);
  const int staleness = core.config.staleness;
  if (core.config.mode != UpdateMode::kStaleSync ||
      step - slowest <= staleness) {
    return slowest;
  }
  const absl::Time start = absl::Now();
  auto may_go = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    return !recheck().ok() ||
           step - core.SlowestStepLocked(nullptr) <= staleness;
  };
  ++core.stats.staleness_waiters;
  core.mu.AwaitWithDeadline(absl::Condition(&may_go), deadline);
  --core.stats.staleness_waiters;
  core.stats.staleness_wait += absl::Now() - start;
  RETURN_IF_ERROR(recheck());
  slowest = core.SlowestStepLocked(&slowest_rank);
  if (step - slowest > staleness) {
    return absl::DeadlineExceededError(
        absl::StrCat(core.Describe(), ": rank ", rank, "'s push of step ", step,
                     " timed out waiting for rank ", slowest_rank,
                     ", which is at step ", slowest, " (staleness bound ",
                     staleness, "); look at rank ", slowest_rank, "'s worker"));
  }
  return slowest;
}

absl::Status AsyncUpdate::CommitLocked(ShardCore& core, PushedGradient& push,
                                       absl::Time deadline) {
  RankSlot& slot = core.ranks[static_cast<size_t>(push.rank)];
  ++core.appliers;
  core.stats.max_queue_depth =
      std::max(core.stats.max_queue_depth, core.appliers);
  absl::Status status = core.BeginWriteLocked(deadline, "applying a gradient");
  if (!status.ok()) {
    --core.appliers;
    return status;
  }
  absl::Duration optimize;
  core.mu.Unlock();
  {
    // The gradient must be contiguous for the optimizer: gather it into
    // the staging buffer unless it is there already.
    float* grads = reinterpret_cast<float*>(push.data);
    const bool staged = push.segments.size() == 1 &&
                        push.segments[0].data == push.data &&
                        push.segments[0].size == push.size_bytes;
    if (!staged) {
      GatherSegments(push.segments, absl::MakeSpan(push.data, push.size_bytes));
    }
    push.holds.clear();
    // A 16-bit job's gradient fills the first half of the staging buffer;
    // widen it to fp32 where it is (the buffer holds size() floats).
    WidenInPlace(core.config.wire_dtype, push.data, core.size());
    const absl::Time t0 = absl::Now();
    status = core.optimizer.Step(absl::MakeSpan(core.params),
                                 absl::MakeConstSpan(grads, core.size()));
    if (status.ok()) core.RoundParamsForWire();
    optimize = absl::Now() - t0;
  }
  core.mu.Lock();
  core.views.EndWriteLocked();
  --core.appliers;
  core.stats.apply_time += optimize;
  if (!status.ok()) return Annotate(status, core.Describe());
  // Step control: decide with this push counted as in flight, so that its
  // own reply carries a decision it triggered; then, with it done, decide
  // again in case it ended a pending decision (the next replies carry it).
  core.decider.NoteEpoch(push.options.switch_epoch);
  core.decider.MaybeDecide(core.SlowestStepLocked(nullptr),
                           core.LargestPushedStepLocked());
  core.decider.SetReply(push.rank);
  core.RecordLocked(push.rank, slot.next_step, slot.accepted_slowest);
  ++slot.next_step;
  slot.pushing = false;
  ++core.version;
  ++core.stats.pushes;
  ++core.stats.updates;
  core.decider.MaybeDecide(core.SlowestStepLocked(nullptr),
                           core.LargestPushedStepLocked());
  return absl::OkStatus();
}

absl::Status AsyncUpdate::AwaitPullLocked(ShardCore& core, int rank,
                                          int64_t step, absl::Time deadline) {
  auto ready = [&core]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    return core.life == ShardLife::kReleased || !core.views.writing();
  };
  if (!core.mu.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat(core.Describe(), ": rank ", rank,
                     "'s pull timed out behind an update that did not finish"));
  }
  return core.CheckServingLocked();
}

absl::Status AsyncUpdate::AwaitStateLocked(ShardCore& core, int64_t step,
                                           absl::Time deadline) {
  // A rank past `step` changed the parameters after it: waiting won't help.
  auto check_ahead = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    std::vector<int> ahead;
    for (size_t r = 0; r < core.ranks.size(); ++r) {
      if (core.ranks[r].next_step > step) ahead.push_back(static_cast<int>(r));
    }
    if (step == 0 || ahead.empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        core.Describe(), ": the state of step ", step,
        " was asked for, but ranks ", absl::StrJoin(ahead, ", "),
        " already pushed that step or later; every rank must stop pushing "
        "at the switch step"));
  };
  RETURN_IF_ERROR(check_ahead());
  auto drained = [&core, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    if (step == 0) return true;
    for (const RankSlot& slot : core.ranks) {
      if (slot.pushing || slot.next_step < step) return false;
    }
    return core.appliers == 0;
  };
  auto ready = [&core, &drained]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu) {
    return core.life == ShardLife::kReleased ||
           (!core.views.writing() && drained());
  };
  if (!core.mu.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    if (!drained()) {
      return absl::DeadlineExceededError(
          absl::StrCat(core.Describe(), ": fetching the state of step ", step,
                       " timed out: ", DrainProgressLocked(core, step),
                       "; look at those ranks' workers"));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        core.Describe(), ": fetching the state timed out behind an update"));
  }
  RETURN_IF_ERROR(core.CheckServingLocked());
  return check_ahead();
}

std::string AsyncUpdate::DrainProgressLocked(const ShardCore& core,
                                             int64_t step) {
  std::vector<std::string> behind;
  for (size_t r = 0; r < core.ranks.size(); ++r) {
    const RankSlot& slot = core.ranks[r];
    if (slot.pushing) {
      behind.push_back(
          absl::StrCat("rank ", r, " is pushing step ", slot.next_step));
    } else if (slot.next_step < step) {
      behind.push_back(absl::StrCat("rank ", r, " has pushed up to step ",
                                    slot.next_step - 1));
    }
  }
  if (behind.empty()) return "an update is still being applied";
  return absl::StrCat(absl::StrJoin(behind, ", "), " (every rank must push ",
                      "every step before ", step, ")");
}

}  // namespace

std::unique_ptr<UpdatePolicy> NewAsyncUpdate() {
  return std::make_unique<AsyncUpdate>();
}

}  // namespace gradsync
