// PsShard: pushes, the step's aggregation and update, pulls (see
// ps_shard.h).
#include "server/ps/ps_shard.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

std::string JoinRanks(const std::vector<int>& ranks) {
  return ranks.empty() ? "none" : absl::StrJoin(ranks, ", ");
}

}  // namespace

// ---- PsShard ----

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
      config, std::move(optimizer), std::move(params), State::kServing));
}

absl::StatusOr<std::shared_ptr<PsShard>> PsShard::CreateAwaitingSeed(
    const PsShardConfig& config) {
  RETURN_IF_ERROR(ValidatePsShardConfig(config));
  const size_t size = config.end - config.begin;
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(config.optimizer, size));
  return std::shared_ptr<PsShard>(new PsShard(config, std::move(optimizer),
                                              std::vector<float>(size),
                                              State::kAwaitingSeed));
}

PsShard::PsShard(const PsShardConfig& config, Optimizer optimizer,
                 std::vector<float> params, State state)
    : config_(config),
      state_(state),
      version_(config.first_step),
      ranks_(static_cast<size_t>(config.num_workers)),
      params_(std::move(params)),
      optimizer_(std::move(optimizer)) {
  for (RankSlot& slot : ranks_) slot.next_step = config.first_step;
}

PsShard::~PsShard() = default;

std::string PsShard::Describe() const {
  return absl::StrCat("ps shard ", config_.shard, " of job '", config_.job_id,
                      "'");
}

absl::Time PsShard::CapDeadline(absl::Time deadline) const {
  return std::min(deadline, absl::Now() + config_.max_wait);
}

absl::Status PsShard::CheckServingLocked() const {
  switch (state_) {
    case State::kServing:
      return absl::OkStatus();
    case State::kAwaitingSeed:
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(),
          " has no parameters yet: it was created to be seeded; send its "
          "state with SeedShard first"));
    case State::kReleased:
      break;
  }
  return absl::AbortedError(
      absl::StrCat(Describe(),
                   " was released (the job left PS mode or "
                   "ended)"));
}

int64_t PsShard::SlowestStepLocked(int* slowest_rank) const {
  int slowest = 0;
  for (size_t r = 1; r < ranks_.size(); ++r) {
    if (ranks_[r].next_step < ranks_[static_cast<size_t>(slowest)].next_step) {
      slowest = static_cast<int>(r);
    }
  }
  if (slowest_rank != nullptr) *slowest_rank = slowest;
  return ranks_[static_cast<size_t>(slowest)].next_step;
}

std::string PsShard::MissingRanksLocked() const {
  std::vector<int> missing, pushed;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    (ranks_[r].committed ? pushed : missing).push_back(static_cast<int>(r));
  }
  return absl::StrCat("ranks ", JoinRanks(missing),
                      " have not pushed it (ranks ", JoinRanks(pushed),
                      " have)");
}

absl::Status PsShard::CheckPushLocked(int rank, int64_t step) const {
  RETURN_IF_ERROR(CheckServingLocked());
  const RankSlot& slot = ranks_[static_cast<size_t>(rank)];
  if (slot.pushing) {
    return absl::AlreadyExistsError(
        absl::StrCat(Describe(), ": rank ", rank, " is already pushing step ",
                     slot.next_step, "; one push per rank and step"));
  }
  if (step < slot.next_step) {
    return absl::AlreadyExistsError(
        absl::StrCat(Describe(), ": rank ", rank, " already pushed step ", step,
                     " (its next step is ", slot.next_step, ")"));
  }
  if (config_.mode == UpdateMode::kSync && slot.committed) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": rank ", rank, " pushed step ", step, ", but step ",
        version_, " is not applied yet: ", MissingRanksLocked(), "; pull step ",
        version_ + 1, "'s parameters first"));
  }
  if (step > slot.next_step) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(), ": rank ", rank, " pushed step ", step,
                     " but its next step is ", slot.next_step));
  }
  return absl::OkStatus();
}

absl::StatusOr<PsShard::Push> PsShard::BeginPush(int rank, int64_t step,
                                                 absl::Time deadline,
                                                 PushOptions options) {
  if (rank < 0 || rank >= config_.num_workers) {
    return absl::PermissionDeniedError(
        absl::StrCat(Describe(), ": rank ", rank, " is not in the job (it has ",
                     config_.num_workers, " ranks)"));
  }
  deadline = CapDeadline(deadline);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckPushLocked(rank, step));
  RETURN_IF_ERROR(CheckScalarsLocked(rank, step, options.scalars.size()));
  int slowest_rank = 0;
  int64_t slowest = SlowestStepLocked(&slowest_rank);
  if (config_.mode == UpdateMode::kStaleSync &&
      step - slowest > config_.staleness) {
    const absl::Time start = absl::Now();
    auto may_go = [this, rank, step]() {
      return !CheckPushLocked(rank, step).ok() ||
             step - SlowestStepLocked(nullptr) <= config_.staleness;
    };
    mu_.AwaitWithDeadline(absl::Condition(&may_go), deadline);
    stats_.staleness_wait += absl::Now() - start;
    RETURN_IF_ERROR(CheckPushLocked(rank, step));
    slowest = SlowestStepLocked(&slowest_rank);
    if (step - slowest > config_.staleness) {
      return absl::DeadlineExceededError(absl::StrCat(
          Describe(), ": rank ", rank, "'s push of step ", step,
          " timed out waiting for rank ", slowest_rank, ", which is at step ",
          slowest, " (staleness bound ", config_.staleness, "); look at rank ",
          slowest_rank, "'s worker"));
    }
  }
  RankSlot& slot = ranks_[static_cast<size_t>(rank)];
  if (slot.staging == nullptr) {
    // Left uninitialised: the push overwrites every byte before use.
    slot.staging.reset(new float[size()]);
  }
  slot.pushing = true;
  slot.accepted_slowest = slowest;
  return Push(shared_from_this(), rank, step,
              reinterpret_cast<char*>(slot.staging.get()),
              size() * sizeof(float), std::move(options));
}

void PsShard::Abandon(int rank) {
  absl::MutexLock lock(&mu_);
  ranks_[static_cast<size_t>(rank)].pushing = false;
}

absl::Status PsShard::BeginWriteLocked(absl::Time deadline, const char* what) {
  auto may_write = [this]() {
    return state_ == State::kReleased || (!writing_ && readers_ == 0);
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&may_write), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        Describe(), ": ", what, " timed out waiting for ", readers_,
        " parameter readers (pulls or state fetches still sending)",
        writing_ ? " and another update" : "",
        "; a client may have stopped reading its stream"));
  }
  if (state_ == State::kReleased) return CheckServingLocked();
  writing_ = true;
  return absl::OkStatus();
}

void PsShard::RecordLocked(int rank, int64_t step, int64_t slowest) {
  history_.push_back(PushRecord{rank, step, slowest});
  while (history_.size() > config_.history_limit) history_.pop_front();
}

absl::Status PsShard::Commit(Push push, absl::Time deadline) {
  if (push.shard_.get() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(),
                     ": the push was committed already or belongs to another "
                     "shard"));
  }
  // Settled below whatever happens; it must not abandon itself later.
  push.shard_ = nullptr;
  const int rank = push.rank_;
  deadline = CapDeadline(deadline);
  absl::MutexLock lock(&mu_);
  RankSlot& slot = ranks_[static_cast<size_t>(rank)];
  if (push.filled_ != push.size_bytes_) {
    slot.pushing = false;
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": rank ", rank, "'s gradient for step ",
                     push.step_, " is incomplete: ", push.filled_, " of ",
                     push.size_bytes_, " bytes arrived"));
  }
  // A descending push recorded its pieces last first.
  if (push.descending()) {
    std::reverse(push.segments_.begin(), push.segments_.end());
  }
  absl::Status status = CheckServingLocked();
  if (status.ok()) {
    status = config_.mode == UpdateMode::kSync
                 ? CommitSyncLocked(push, deadline)
                 : CommitAsyncLocked(push, deadline);
  }
  slot.pushing = false;
  return status;
}

absl::Status PsShard::CommitSyncLocked(Push& push, absl::Time deadline) {
  const int rank = push.rank_;
  RankSlot& slot = ranks_[static_cast<size_t>(rank)];
  // Checked again: ranks that began together may disagree.
  RETURN_IF_ERROR(
      CheckScalarsLocked(rank, push.step_, push.options_.scalars.size()));
  const bool last = committed_ + 1 == config_.num_workers;
  // The last rank applies the step; it needs the parameters to itself.
  if (last) RETURN_IF_ERROR(BeginWriteLocked(deadline, "applying the step"));
  const absl::Time now = absl::Now();
  if (committed_ == 0) {
    first_commit_ = now;
    step_scalars_ = push.options_.scalars.size();
    step_scalars_rank_ = rank;
  }
  slot.committed = true;
  slot.next_step = version_ + 1;
  slot.segments = std::move(push.segments_);
  slot.holds = std::move(push.holds_);
  slot.scalars = std::move(push.options_.scalars);
  slot.switch_epoch = push.options_.switch_epoch;
  ++committed_;
  ++stats_.pushes;
  stats_.max_queue_depth = std::max(stats_.max_queue_depth, committed_);
  RecordLocked(rank, version_, slot.accepted_slowest);
  if (!last) return absl::OkStatus();

  stats_.last_wait_last_worker = now - first_commit_;
  stats_.wait_last_worker += stats_.last_wait_last_worker;
  std::vector<const GradientSegments*> parts;
  for (const RankSlot& r : ranks_) parts.push_back(&r.segments);
  std::vector<double> scalar_sums = SumScalarsLocked();
  std::vector<std::vector<std::shared_ptr<const void>>> holds;
  absl::Status status;
  absl::Duration apply;
  mu_.Unlock();
  {
    // writing_ gives this thread the parameters, the optimizer and the
    // committed gradients (no rank can push until version_ moves). The
    // mean is made and applied a block at a time, while it is in L1.
    const absl::Time t0 = absl::Now();
    status = ApplyMean(parts);
    apply = absl::Now() - t0;
    // Hand the transports' buffers back now, without the lock.
    for (RankSlot& r : ranks_) {
      holds.push_back(std::move(r.holds));
      r.holds.clear();
      r.segments.clear();
    }
    holds.clear();
  }
  mu_.Lock();
  writing_ = false;
  stats_.apply_time += apply;
  for (RankSlot& r : ranks_) r.committed = false;
  committed_ = 0;
  if (!status.ok()) {
    // The optimizer changed nothing; the ranks may push the step again.
    for (RankSlot& r : ranks_) r.next_step = version_;
    return Annotate(status, Describe());
  }
  ++version_;
  ++stats_.updates;
  FinishSyncStepLocked(std::move(scalar_sums));
  return absl::OkStatus();
}

absl::Status PsShard::ApplyMean(
    absl::Span<const GradientSegments* const> parts) {
  // StepRange fails only for a range outside the optimizer's elements;
  // checked once here, so that a step is applied whole or not at all.
  if (params_.size() != optimizer_.size()) {
    return absl::InternalError(absl::StrCat("the shard holds ", params_.size(),
                                            " parameters but its optimizer ",
                                            optimizer_.size()));
  }
  absl::Mutex mu;
  absl::Status first_error;
  ReduceInBlocks(
      parts, /*average=*/!config_.sum_gradients, size(), config_.compute.get(),
      [&](size_t begin, absl::Span<const float> mean) {
        absl::Status status = optimizer_.StepRange(
            begin, absl::MakeSpan(params_).subspan(begin, mean.size()), mean);
        if (!status.ok()) {
          absl::MutexLock lock(&mu);
          first_error.Update(status);
        }
      });
  RETURN_IF_ERROR(first_error);
  optimizer_.EndStep();
  return absl::OkStatus();
}

absl::Status PsShard::CommitAsyncLocked(Push& push, absl::Time deadline) {
  RankSlot& slot = ranks_[static_cast<size_t>(push.rank_)];
  ++appliers_;
  stats_.max_queue_depth = std::max(stats_.max_queue_depth, appliers_);
  absl::Status status = BeginWriteLocked(deadline, "applying a gradient");
  if (!status.ok()) {
    --appliers_;
    return status;
  }
  absl::Duration optimize;
  mu_.Unlock();
  {
    // The gradient must be contiguous for the optimizer: gather it into
    // the staging buffer unless it is there already.
    float* grads = reinterpret_cast<float*>(push.data_);
    const bool staged = push.segments_.size() == 1 &&
                        push.segments_[0].data == push.data_ &&
                        push.segments_[0].size == push.size_bytes_;
    if (!staged) {
      GatherSegments(push.segments_,
                     absl::MakeSpan(push.data_, push.size_bytes_));
    }
    push.holds_.clear();
    const absl::Time t0 = absl::Now();
    status = optimizer_.Step(absl::MakeSpan(params_),
                             absl::MakeConstSpan(grads, size()));
    optimize = absl::Now() - t0;
  }
  mu_.Lock();
  writing_ = false;
  --appliers_;
  stats_.apply_time += optimize;
  if (!status.ok()) return Annotate(status, Describe());
  // Step control: decide with this push counted as in flight, so that its
  // own reply carries a decision it triggered; then, with it done, decide
  // again in case it ended a pending decision (the next replies carry it).
  NoteEpochLocked(push.options_.switch_epoch);
  MaybeDecideLocked();
  slot.reply = decision_;
  slot.has_reply = true;
  RecordLocked(push.rank_, slot.next_step, slot.accepted_slowest);
  ++slot.next_step;
  slot.pushing = false;
  ++version_;
  ++stats_.pushes;
  ++stats_.updates;
  MaybeDecideLocked();
  return absl::OkStatus();
}

ShardViewRef PsShard::MakeViewLocked(bool with_state, int64_t version,
                                     int pull_rank) {
  ++readers_;
  auto* view = new ShardView;
  view->version = version;
  if (pull_rank >= 0) FillControlLocked(pull_rank, view);
  view->params = absl::MakeConstSpan(params_);
  uint64_t bytes = params_.size() * sizeof(float);
  if (with_state) {
    view->optimizer_kind = optimizer_.kind();
    view->optimizer_step = optimizer_.step_count();
    for (size_t i = 0; i < NumStateBuffers(optimizer_.kind()); ++i) {
      view->state.push_back(optimizer_.state_buffer(i));
      bytes += view->state.back().size() * sizeof(float);
    }
  }
  stats_.bytes_out += bytes;
  std::shared_ptr<PsShard> self = shared_from_this();
  return ShardViewRef(view, [self](const ShardView* v) {
    delete v;
    self->ReleaseView();
  });
}

void PsShard::ReleaseView() {
  absl::MutexLock lock(&mu_);
  --readers_;
}

absl::StatusOr<ShardViewRef> PsShard::Pull(int rank, int64_t step,
                                           absl::Time deadline) {
  if (rank < 0 || rank >= config_.num_workers) {
    return absl::PermissionDeniedError(
        absl::StrCat(Describe(), ": rank ", rank, " is not in the job (it has ",
                     config_.num_workers, " ranks)"));
  }
  deadline = CapDeadline(deadline);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckServingLocked());
  if (config_.mode == UpdateMode::kSync) {
    if (step > version_ + 1 ||
        (step == version_ + 1 && !ranks_[static_cast<size_t>(rank)].committed &&
         !ranks_[static_cast<size_t>(rank)].pushing)) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(), ": rank ", rank, " asked for the parameters of step ",
          step, ", but the shard is at step ", version_,
          " and the rank has not pushed it"));
    }
    auto ready = [this, step]() {
      return state_ == State::kReleased || (version_ >= step && !writing_);
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat(Describe(), ": rank ", rank, "'s pull of step ", step,
                       " timed out: step ", version_, " is not applied; ",
                       MissingRanksLocked(), "; look at those workers"));
    }
    RETURN_IF_ERROR(CheckServingLocked());
    if (version_ > step) {
      return absl::FailedPreconditionError(
          absl::StrCat(Describe(), ": the parameters of step ", step,
                       " were already replaced by step ", version_, "'s"));
    }
  } else {
    auto ready = [this]() { return state_ == State::kReleased || !writing_; };
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      return absl::DeadlineExceededError(absl::StrCat(
          Describe(), ": rank ", rank,
          "'s pull timed out behind an update that did not finish"));
    }
    RETURN_IF_ERROR(CheckServingLocked());
  }
  ++stats_.pulls;
  return MakeViewLocked(/*with_state=*/false, version_, rank);
}

}  // namespace gradsync
