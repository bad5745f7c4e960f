#include "server/ps/shard/switch_decider.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {

SwitchDecider::SwitchDecider(bool sync, int num_workers)
    : sync_(sync), ranks_(static_cast<size_t>(num_workers)) {}

absl::Status SwitchDecider::CheckScalars(absl::string_view shard, int committed,
                                         int rank, int64_t step,
                                         size_t count) const {
  if (!sync_ || committed == 0 || count == step_scalars_) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      shard, ": rank ", rank, " sent ", count, " step scalars for step ", step,
      ", but rank ", step_scalars_rank_, " sent ", step_scalars_,
      "; every rank must send the same scalars (check that all ranks run "
      "the same worker version and job spec)"));
}

void SwitchDecider::NoteSyncCommit(int rank, bool first,
                                   std::vector<double> scalars, int64_t epoch) {
  if (first) {
    step_scalars_ = scalars.size();
    step_scalars_rank_ = rank;
  }
  RankControl& control = ranks_[static_cast<size_t>(rank)];
  control.scalars = std::move(scalars);
  control.switch_epoch = epoch;
}

std::vector<double> SwitchDecider::SumScalars() const {
  std::vector<double> sums(step_scalars_, 0.0);
  // Rank order, so that every shard and every run adds the same way.
  for (const RankControl& control : ranks_) {
    for (size_t j = 0; j < sums.size() && j < control.scalars.size(); ++j) {
      sums[j] += control.scalars[j];
    }
  }
  return sums;
}

void SwitchDecider::FinishSyncStep(std::vector<double> sums,
                                   int64_t next_step) {
  scalar_sums_ = std::move(sums);
  int64_t newest = 0;
  for (const RankControl& control : ranks_) {
    newest = std::max(newest, control.switch_epoch);
  }
  if (newest > decision_.epoch) decision_ = SwitchDecision{newest, next_step};
}

void SwitchDecider::NoteEpoch(int64_t epoch) {
  reported_epoch_ = std::max(reported_epoch_, epoch);
}

void SwitchDecider::MaybeDecide(int64_t slowest_step,
                                int64_t largest_pushed_step) {
  if (reported_epoch_ <= decision_.epoch) return;
  // Pending until every rank has committed step S - 1: until then a rank
  // may not have seen the decision yet, so it must not change.
  if (decision_.step > 0 && slowest_step < decision_.step) return;
  // Every rank's next push is at most largest + 1 = S - 1, and the pull
  // after it carries the decision.
  decision_ = SwitchDecision{reported_epoch_, largest_pushed_step + 2};
}

void SwitchDecider::SetReply(int rank) {
  RankControl& control = ranks_[static_cast<size_t>(rank)];
  control.reply = decision_;
  control.has_reply = true;
}

StepControl SwitchDecider::ForPull(int rank) const {
  StepControl control;
  if (sync_) {
    control.scalar_sums = scalar_sums_;
    control.decision = decision_;
    return control;
  }
  const RankControl& r = ranks_[static_cast<size_t>(rank)];
  control.decision = r.has_reply ? r.reply : decision_;
  return control;
}

void SwitchDecider::ResetForSeed() {
  scalar_sums_.clear();
  for (RankControl& control : ranks_) control.has_reply = false;
}

}  // namespace gradsync
