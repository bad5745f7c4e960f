// PsShard: configuration checks, the Push handle, the state hand-over of
// mode switches, and the counters (see ps_shard.h).
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/ps/ps_shard.h"

namespace gradsync {
namespace {

std::string JoinRanks(const std::vector<int>& ranks) {
  return ranks.empty() ? "none" : absl::StrJoin(ranks, ", ");
}

}  // namespace

const char* UpdateModeName(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kSync:
      return "sync";
    case UpdateMode::kAsync:
      return "async";
    case UpdateMode::kStaleSync:
      return "ssp";
  }
  return "invalid";
}

absl::Status ValidatePsShardConfig(const PsShardConfig& config) {
  if (config.job_id.empty()) {
    return absl::InvalidArgumentError("a shard needs a job id");
  }
  if (config.shard < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard index ", config.shard, " is negative"));
  }
  if (config.begin >= config.end) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard range [", config.begin, ", ", config.end,
                     ") is empty; a shard owns at least one element"));
  }
  if (config.num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_workers is ", config.num_workers, "; it must be at least 1"));
  }
  if (config.mode != UpdateMode::kSync && config.mode != UpdateMode::kAsync &&
      config.mode != UpdateMode::kStaleSync) {
    return absl::InvalidArgumentError("unknown update mode");
  }
  if (config.staleness < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("staleness is ", config.staleness, "; it must be >= 0"));
  }
  if (config.first_step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("first_step is ", config.first_step, "; it must be >= 0"));
  }
  if (config.max_wait <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_wait must be positive");
  }
  return ValidateOptimizerConfig(config.optimizer);
}

// ---- Push ----

PsShard::Push::Push(std::shared_ptr<PsShard> shard, int rank, int64_t step,
                    char* data, size_t size_bytes, PushOptions options)
    : shard_(std::move(shard)),
      rank_(rank),
      step_(step),
      options_(std::move(options)),
      data_(data),
      size_bytes_(size_bytes) {}

PsShard::Push::Push(Push&& other) noexcept
    : shard_(std::move(other.shard_)),
      rank_(other.rank_),
      step_(other.step_),
      options_(std::move(other.options_)),
      data_(other.data_),
      size_bytes_(other.size_bytes_),
      filled_(other.filled_),
      segments_(std::move(other.segments_)),
      holds_(std::move(other.holds_)) {
  other.shard_ = nullptr;
}

PsShard::Push& PsShard::Push::operator=(Push&& other) noexcept {
  if (this != &other) {
    if (shard_ != nullptr) shard_->Abandon(rank_);
    shard_ = std::move(other.shard_);
    other.shard_ = nullptr;
    rank_ = other.rank_;
    step_ = other.step_;
    options_ = std::move(other.options_);
    data_ = other.data_;
    size_bytes_ = other.size_bytes_;
    filled_ = other.filled_;
    segments_ = std::move(other.segments_);
    holds_ = std::move(other.holds_);
  }
  return *this;
}

PsShard::Push::~Push() {
  if (shard_ != nullptr) shard_->Abandon(rank_);
}

void PsShard::Push::AddSegment(const char* bytes, size_t n) {
  if (n == 0) return;
  if (!descending()) {
    AppendSegment(&segments_, bytes, n);
  } else if (!segments_.empty() && bytes + n == segments_.back().data) {
    // Continues the last piece downwards: one segment.
    segments_.back().data = bytes;
    segments_.back().size += n;
  } else {
    segments_.push_back(ByteSegment{bytes, n});
  }
  filled_ += n;
  if (shard_ != nullptr) shard_->bytes_in_.fetch_add(n);
}

absl::Status PsShard::Push::MarkFilled(size_t n) {
  if (n > size_bytes_ - filled_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank_, " sent more than its gradient for step ", step_, ": ",
        filled_ + n, " bytes for a shard of ", size_bytes_,
        " bytes; check the shard range the worker uses"));
  }
  AddSegment(
      descending() ? data_ + (size_bytes_ - filled_ - n) : data_ + filled_, n);
  return absl::OkStatus();
}

absl::Status PsShard::Push::AppendExternal(
    absl::Span<const char> bytes, std::shared_ptr<const void> keep_alive) {
  if (bytes.size() > size_bytes_ - filled_) return MarkFilled(bytes.size());
  AddSegment(bytes.data(), bytes.size());
  if (keep_alive != nullptr) holds_.push_back(std::move(keep_alive));
  return absl::OkStatus();
}

absl::Status PsShard::Push::SetScalars(std::vector<double> scalars) {
  if (scalars.size() != options_.scalars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the trailer holds ", scalars.size(),
                     " step scalars, but the push's "
                     "header announced ",
                     options_.scalars.size()));
  }
  options_.scalars = std::move(scalars);
  return absl::OkStatus();
}

absl::Status PsShard::Push::Append(absl::Span<const char> bytes) {
  const size_t n = bytes.size();
  if (n <= size_bytes_ - filled_ && n > 0) {
    char* to =
        descending() ? data_ + (size_bytes_ - filled_ - n) : data_ + filled_;
    std::memcpy(to, bytes.data(), n);
  }
  return MarkFilled(n);
}

absl::StatusOr<ShardViewRef> PsShard::AcquireState(absl::Time deadline,
                                                   int64_t step) {
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": the state was asked for step ", step,
                     "; use a step >= 0 (0: the current one)"));
  }
  deadline = CapDeadline(deadline);
  const bool sync = config_.mode == UpdateMode::kSync;
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckServingLocked());
  if (sync && committed_ > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": cannot hand over the state in the middle of step ",
        version_, ": ", MissingRanksLocked(),
        "; switch modes at a step boundary"));
  }
  if (sync && step > 0 && version_ != step) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(), ": the state of step ", step,
                     " was asked for, but the shard is at step ", version_,
                     "; fetch it at the step the ranks switch at"));
  }
  // A rank past `step` changed the parameters after it: waiting won't help.
  auto ahead = [this, step]() {
    std::vector<int> ranks;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].next_step > step) ranks.push_back(static_cast<int>(r));
    }
    return ranks;
  };
  auto check_ahead = [&]() -> absl::Status {
    if (sync || step == 0 || ahead().empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": the state of step ", step, " was asked for, but ranks ",
        JoinRanks(ahead()),
        " already pushed that step or later; every rank must stop pushing "
        "at the switch step"));
  };
  RETURN_IF_ERROR(check_ahead());
  auto drained = [this, step, sync]() {
    if (sync || step == 0) return true;
    for (const RankSlot& slot : ranks_) {
      if (slot.pushing || slot.next_step < step) return false;
    }
    return appliers_ == 0;
  };
  auto ready = [this, &drained]() {
    return state_ == State::kReleased || (!writing_ && drained());
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    if (!drained()) {
      return absl::DeadlineExceededError(absl::StrCat(
          Describe(), ": fetching the state of step ", step, " timed out: ",
          DrainProgressLocked(step), "; look at those ranks' workers"));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        Describe(), ": fetching the state timed out behind an update"));
  }
  RETURN_IF_ERROR(CheckServingLocked());
  RETURN_IF_ERROR(check_ahead());
  return MakeViewLocked(/*with_state=*/true, step > 0 ? step : version_,
                        /*pull_rank=*/-1);
}

absl::StatusOr<ParameterState> PsShard::ExportState(absl::Time deadline,
                                                    int64_t step) {
  ASSIGN_OR_RETURN(ShardViewRef view, AcquireState(deadline, step));
  ParameterState state;
  state.step = view->version;
  state.params.assign(view->params.begin(), view->params.end());
  // The view keeps writers out, so reading the optimizer here is safe.
  state.optimizer = optimizer_.ExportState();
  return state;
}

absl::Status PsShard::ImportState(ParameterState state, absl::Time deadline) {
  if (state.params.size() != size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": the seed holds ", state.params.size(),
                     " parameters; the shard owns ", size()));
  }
  if (state.step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Describe(), ": the seed's step is ", state.step, "; it must be >= 0"));
  }
  if (state.optimizer.kind != optimizer_.kind() ||
      state.optimizer.size != size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": the seed's optimizer state is ",
                     OptimizerKindName(state.optimizer.kind), " over ",
                     state.optimizer.size, " elements; the shard runs ",
                     OptimizerKindName(optimizer_.kind()), " over ", size()));
  }
  RETURN_IF_ERROR(
      Annotate(ValidateOptimizerState(state.optimizer), Describe()));
  deadline = CapDeadline(deadline);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(BeginWriteLocked(deadline, "seeding the shard"));
  // Checked with the parameters held: no push can start meanwhile.
  std::vector<int> busy;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r].pushing || ranks_[r].committed) {
      busy.push_back(static_cast<int>(r));
    }
  }
  if (!busy.empty()) {
    writing_ = false;
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": cannot replace the state while ranks ", JoinRanks(busy),
        " are pushing step ", version_, "; seed at a step boundary"));
  }
  // Under mu_ on purpose: nothing may start a push against the old step
  // while the state changes (a rare, switch-time operation).
  const absl::Status status = optimizer_.ImportState(state.optimizer);
  writing_ = false;
  if (!status.ok()) return Annotate(status, Describe());
  state_ = State::kServing;
  params_.swap(state.params);
  version_ = state.step;
  // The decision and the reported epochs stay: an epoch is decided once.
  scalar_sums_.clear();
  for (RankSlot& slot : ranks_) {
    slot.next_step = state.step;
    slot.has_reply = false;
  }
  return absl::OkStatus();
}

void PsShard::Release() {
  absl::MutexLock lock(&mu_);
  state_ = State::kReleased;
}

PsShardStats PsShard::Stats() const {
  absl::MutexLock lock(&mu_);
  PsShardStats stats = stats_;
  stats.version = version_;
  stats.bytes_in = bytes_in_.load();
  stats.queue_depth =
      config_.mode == UpdateMode::kSync ? committed_ : appliers_;
  stats.rank_steps.clear();
  for (const RankSlot& slot : ranks_)
    stats.rank_steps.push_back(slot.next_step);
  return stats;
}

SwitchDecision PsShard::decision() const {
  absl::MutexLock lock(&mu_);
  return decision_;
}

std::vector<PushRecord> PsShard::History() const {
  absl::MutexLock lock(&mu_);
  return std::vector<PushRecord>(history_.begin(), history_.end());
}

}  // namespace gradsync
