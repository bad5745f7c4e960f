// PsShard: step control, the scalars and switch decisions the ranks agree
// on through the shard (see "Step control" in ps_shard.h).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/ps/ps_shard.h"

namespace gradsync {

absl::Status PsShard::CheckScalarsLocked(int rank, int64_t step,
                                         size_t count) const {
  if (config_.mode != UpdateMode::kSync || committed_ == 0 ||
      count == step_scalars_) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      Describe(), ": rank ", rank, " sent ", count, " step scalars for step ",
      step, ", but rank ", step_scalars_rank_, " sent ", step_scalars_,
      "; every rank must send the same scalars (check that all ranks run "
      "the same worker version and job spec)"));
}

std::vector<double> PsShard::SumScalarsLocked() const {
  std::vector<double> sums(step_scalars_, 0.0);
  // Rank order, so that every shard and every run adds the same way.
  for (const RankSlot& slot : ranks_) {
    for (size_t j = 0; j < sums.size() && j < slot.scalars.size(); ++j) {
      sums[j] += slot.scalars[j];
    }
  }
  return sums;
}

void PsShard::FinishSyncStepLocked(std::vector<double> sums) {
  scalar_sums_ = std::move(sums);
  int64_t newest = 0;
  for (const RankSlot& slot : ranks_) {
    newest = std::max(newest, slot.switch_epoch);
  }
  // version_ is the step after the one just applied: the ranks learn the
  // decision in that step's replies and act on it when they start it.
  if (newest > decision_.epoch) decision_ = SwitchDecision{newest, version_};
}

void PsShard::NoteEpochLocked(int64_t epoch) {
  reported_epoch_ = std::max(reported_epoch_, epoch);
}

int64_t PsShard::LargestPushedStepLocked() const {
  int64_t largest = config_.first_step - 1;
  for (const RankSlot& slot : ranks_) {
    largest =
        std::max(largest, slot.pushing ? slot.next_step : slot.next_step - 1);
  }
  return largest;
}

void PsShard::MaybeDecideLocked() {
  if (reported_epoch_ <= decision_.epoch) return;
  // Pending until every rank has committed step S - 1: until then a rank
  // may not have seen the decision yet, so it must not change.
  if (decision_.step > 0 && SlowestStepLocked(nullptr) < decision_.step) {
    return;
  }
  // Every rank's next push is at most largest + 1 = S - 1, and the pull
  // after it carries the decision.
  decision_ = SwitchDecision{reported_epoch_, LargestPushedStepLocked() + 2};
}

void PsShard::FillControlLocked(int rank, ShardView* view) const {
  if (config_.mode == UpdateMode::kSync) {
    view->scalar_sums = scalar_sums_;
    view->decision = decision_;
    return;
  }
  const RankSlot& slot = ranks_[static_cast<size_t>(rank)];
  view->decision = slot.has_reply ? slot.reply : decision_;
}

std::string PsShard::DrainProgressLocked(int64_t step) const {
  std::vector<std::string> behind;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankSlot& slot = ranks_[r];
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

}  // namespace gradsync
