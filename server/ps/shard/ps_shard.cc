// PsShard: pushes, commits and pulls, each checked here and handed to the
// update mode's policy (see ps_shard.h).
#include "server/ps/shard/ps_shard.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {

absl::StatusOr<std::shared_ptr<PsShard>> PsShard::Create(
    const PsShardConfig& config, std::vector<float> params) {
  RETURN_IF_ERROR(ValidatePsShardConfig(config));
  const size_t size = config.end - config.begin;
  if (params.size() != size) {
    return absl::InvalidArgumentError(
        absl::StrCat("initial parameters hold ", params.size(),
                     " floats; the shard owns ", size));
  }
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(config.optimizer, size));
  return std::shared_ptr<PsShard>(new PsShard(
      config, std::move(optimizer), std::move(params), ShardLife::kServing));
}

absl::StatusOr<std::shared_ptr<PsShard>> PsShard::CreateAwaitingSeed(
    const PsShardConfig& config) {
  RETURN_IF_ERROR(ValidatePsShardConfig(config));
  const size_t size = config.end - config.begin;
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(config.optimizer, size));
  return std::shared_ptr<PsShard>(new PsShard(config, std::move(optimizer),
                                              std::vector<float>(size),
                                              ShardLife::kAwaitingSeed));
}

PsShard::PsShard(const PsShardConfig& config, Optimizer optimizer,
                 std::vector<float> params, ShardLife life)
    : core_(config, std::move(optimizer), std::move(params), life),
      policy_(config.mode == UpdateMode::kSync ? NewSyncUpdate()
                                               : NewAsyncUpdate()) {}

PsShard::~PsShard() = default;

absl::Status PsShard::CheckRank(int rank) const {
  if (rank >= 0 && rank < core_.config.num_workers) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      core_.Describe(), ": rank ", rank, " is not in the job (it has ",
      core_.config.num_workers, " ranks)"));
}

absl::StatusOr<PsShard::Push> PsShard::BeginPush(int rank, int64_t step,
                                                 absl::Time deadline,
                                                 PushOptions options) {
  RETURN_IF_ERROR(CheckRank(rank));
  deadline = core_.CapDeadline(deadline);
  absl::MutexLock lock(&core_.mu);
  RETURN_IF_ERROR(core_.CheckPushLocked(rank, step));
  RETURN_IF_ERROR(core_.decider.CheckScalars(
      core_.Describe(), core_.committed, rank, step, options.scalars.size()));
  ASSIGN_OR_RETURN(
      const int64_t slowest,
      policy_->AdmitLocked(core_, rank, step, deadline,
                           [this, rank, step]()
                               ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_.mu) {
                                 return core_.CheckPushLocked(rank, step);
                               }));
  RankSlot& slot = core_.ranks[static_cast<size_t>(rank)];
  if (slot.staging == nullptr) {
    // Left uninitialised: the push overwrites every byte before use.
    slot.staging.reset(new float[size()]);
  }
  slot.pushing = true;
  slot.accepted_slowest = slowest;
  return Push(shared_from_this(), rank, step,
              reinterpret_cast<char*>(slot.staging.get()),
              size() * WireElementBytes(core_.config.wire_dtype),
              std::move(options));
}

void PsShard::Abandon(int rank) {
  absl::MutexLock lock(&core_.mu);
  core_.ranks[static_cast<size_t>(rank)].pushing = false;
}

absl::Status PsShard::Commit(Push push, absl::Time deadline) {
  if (push.shard_.get() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat(core_.Describe(),
                     ": the push was committed already or belongs to another "
                     "shard"));
  }
  // Settled below whatever happens; it must not abandon itself later.
  push.shard_ = nullptr;
  const int rank = push.rank_;
  deadline = core_.CapDeadline(deadline);
  absl::MutexLock lock(&core_.mu);
  RankSlot& slot = core_.ranks[static_cast<size_t>(rank)];
  if (push.filled_ != push.size_bytes_) {
    slot.pushing = false;
    return absl::InvalidArgumentError(
        absl::StrCat(core_.Describe(), ": rank ", rank, "'s gradient for step ",
                     push.step_, " is incomplete: ", push.filled_, " of ",
                     push.size_bytes_, " bytes arrived"));
  }
  PushedGradient gradient;
  gradient.rank = rank;
  gradient.step = push.step_;
  gradient.data = push.data_;
  gradient.size_bytes = push.size_bytes_;
  gradient.segments = std::move(push.segments_);
  gradient.holds = std::move(push.holds_);
  gradient.options = std::move(push.options_);
  // A descending push recorded its pieces last first.
  if (gradient.options.descending) {
    std::reverse(gradient.segments.begin(), gradient.segments.end());
  }
  absl::Status status = core_.CheckServingLocked();
  if (status.ok()) status = policy_->CommitLocked(core_, gradient, deadline);
  slot.pushing = false;
  return status;
}

ShardViewRef PsShard::MakeViewLocked(bool with_state, int64_t version,
                                     int pull_rank) {
  auto* view = new ShardView;
  view->version = version;
  if (pull_rank >= 0) {
    StepControl control = core_.decider.ForPull(pull_rank);
    view->scalar_sums = std::move(control.scalar_sums);
    view->decision = control.decision;
  }
  view->params = absl::MakeConstSpan(core_.params);
  uint64_t bytes = core_.params.size() * sizeof(float);
  if (!with_state && !core_.wire_params.empty()) {
    // A pull of a 16-bit job sends the rounded copy.
    view->wire_params = absl::MakeConstSpan(core_.wire_params);
    bytes = core_.wire_params.size() * sizeof(uint16_t);
  }
  if (with_state) {
    view->optimizer_kind = core_.optimizer.kind();
    view->optimizer_step = core_.optimizer.step_count();
    for (size_t i = 0; i < NumStateBuffers(core_.optimizer.kind()); ++i) {
      view->state.push_back(core_.optimizer.state_buffer(i));
      bytes += view->state.back().size() * sizeof(float);
    }
  }
  core_.stats.bytes_out += bytes;
  return core_.views.ShareLocked(view, shared_from_this());
}

absl::StatusOr<ShardViewRef> PsShard::Pull(int rank, int64_t step,
                                           absl::Time deadline) {
  RETURN_IF_ERROR(CheckRank(rank));
  deadline = core_.CapDeadline(deadline);
  absl::MutexLock lock(&core_.mu);
  RETURN_IF_ERROR(core_.CheckServingLocked());
  RETURN_IF_ERROR(policy_->AwaitPullLocked(core_, rank, step, deadline));
  ++core_.stats.pulls;
  return MakeViewLocked(/*with_state=*/false, core_.version, rank);
}

absl::StatusOr<ShardViewRef> PsShard::AcquireState(absl::Time deadline,
                                                   int64_t step) {
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(core_.Describe(), ": the state was asked for step ", step,
                     "; use a step >= 0 (0: the current one)"));
  }
  deadline = core_.CapDeadline(deadline);
  absl::MutexLock lock(&core_.mu);
  RETURN_IF_ERROR(core_.CheckServingLocked());
  RETURN_IF_ERROR(policy_->AwaitStateLocked(core_, step, deadline));
  return MakeViewLocked(/*with_state=*/true, step > 0 ? step : core_.version,
                        /*pull_rank=*/-1);
}

void PsShard::Release() {
  absl::MutexLock lock(&core_.mu);
  core_.life = ShardLife::kReleased;
}

PsShardStats PsShard::Stats() const {
  absl::MutexLock lock(&core_.mu);
  PsShardStats stats = core_.stats;
  stats.version = core_.version;
  stats.bytes_in = core_.bytes_in.load();
  stats.queue_depth = policy_->QueueDepthLocked(core_);
  stats.rank_steps.clear();
  for (const RankSlot& slot : core_.ranks) {
    stats.rank_steps.push_back(slot.next_step);
  }
  return stats;
}

SwitchDecision PsShard::decision() const {
  absl::MutexLock lock(&core_.mu);
  return core_.decider.decision();
}

std::vector<PushRecord> PsShard::History() const {
  absl::MutexLock lock(&core_.mu);
  return std::vector<PushRecord>(core_.history.begin(), core_.history.end());
}

}  // namespace gradsync
