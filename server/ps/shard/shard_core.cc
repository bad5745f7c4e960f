#include "server/ps/shard/shard_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace {

std::string JoinRanks(const std::vector<int>& ranks) {
  return ranks.empty() ? "none" : absl::StrJoin(ranks, ", ");
}

}  // namespace

ShardCore::ShardCore(const PsShardConfig& shard_config,
                     Optimizer shard_optimizer,
                     std::vector<float> initial_params, ShardLife initial_life)
    : config(shard_config),
      life(initial_life),
      version(shard_config.first_step),
      ranks(static_cast<size_t>(shard_config.num_workers)),
      decider(shard_config.mode == UpdateMode::kSync, shard_config.num_workers),
      params(std::move(initial_params)),
      optimizer(std::move(shard_optimizer)) {
  for (RankSlot& slot : ranks) slot.next_step = config.first_step;
  RoundParamsForWire();
}

void ShardCore::RoundParamsForWire() {
  if (!IsWire16(config.wire_dtype)) return;
  wire_params.resize(params.size());
  RoundForWire(config.wire_dtype, params, wire_params.data());
}

std::string ShardCore::Describe() const {
  return absl::StrCat("ps shard ", config.shard, " of job '", config.job_id,
                      "'");
}

absl::Time ShardCore::CapDeadline(absl::Time deadline) const {
  return std::min(deadline, absl::Now() + config.max_wait);
}

absl::Status ShardCore::CheckServingLocked() const {
  switch (life) {
    case ShardLife::kServing:
      return absl::OkStatus();
    case ShardLife::kAwaitingSeed:
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(),
          " has no parameters yet: it was created to be seeded; send its "
          "state with SeedShard first"));
    case ShardLife::kReleased:
      break;
  }
  return absl::AbortedError(
      absl::StrCat(Describe(),
                   " was released (the job left PS mode or "
                   "ended)"));
}

int64_t ShardCore::SlowestStepLocked(int* slowest_rank) const {
  int slowest = 0;
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].next_step < ranks[static_cast<size_t>(slowest)].next_step) {
      slowest = static_cast<int>(r);
    }
  }
  if (slowest_rank != nullptr) *slowest_rank = slowest;
  return ranks[static_cast<size_t>(slowest)].next_step;
}

int64_t ShardCore::LargestPushedStepLocked() const {
  int64_t largest = config.first_step - 1;
  for (const RankSlot& slot : ranks) {
    largest =
        std::max(largest, slot.pushing ? slot.next_step : slot.next_step - 1);
  }
  return largest;
}

std::string ShardCore::MissingRanksLocked() const {
  std::vector<int> missing, pushed;
  for (size_t r = 0; r < ranks.size(); ++r) {
    (ranks[r].committed ? pushed : missing).push_back(static_cast<int>(r));
  }
  return absl::StrCat("ranks ", JoinRanks(missing),
                      " have not pushed it (ranks ", JoinRanks(pushed),
                      " have)");
}

absl::Status ShardCore::CheckPushLocked(int rank, int64_t step) const {
  if (absl::Status status = CheckServingLocked(); !status.ok()) return status;
  const RankSlot& slot = ranks[static_cast<size_t>(rank)];
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
  if (config.mode == UpdateMode::kSync && slot.committed) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(), ": rank ", rank, " pushed step ", step, ", but step ",
        version, " is not applied yet: ", MissingRanksLocked(), "; pull step ",
        version + 1, "'s parameters first"));
  }
  if (step > slot.next_step) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(), ": rank ", rank, " pushed step ", step,
                     " but its next step is ", slot.next_step));
  }
  return absl::OkStatus();
}

void ShardCore::RecordLocked(int rank, int64_t step, int64_t slowest) {
  history.push_back(PushRecord{rank, step, slowest});
  while (history.size() > config.history_limit) history.pop_front();
}

absl::Status ShardCore::BeginWriteLocked(absl::Time deadline,
                                         const char* what) {
  return views.BeginWriteLocked(
      deadline,
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
        return life == ShardLife::kReleased ? CheckServingLocked()
                                            : absl::OkStatus();
      },
      absl::StrCat(Describe(), ": ", what));
}

}  // namespace gradsync
