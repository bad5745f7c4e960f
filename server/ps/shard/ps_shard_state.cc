// PsShard: the state hand-over of mode switches (see ps_shard.h).
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {
namespace {

std::string JoinRanks(const std::vector<int>& ranks) {
  return ranks.empty() ? "none" : absl::StrJoin(ranks, ", ");
}

}  // namespace

absl::StatusOr<ParameterState> PsShard::ExportState(absl::Time deadline,
                                                    int64_t step) {
  ASSIGN_OR_RETURN(ShardViewRef view, AcquireState(deadline, step));
  ParameterState state;
  state.step = view->version;
  state.params.assign(view->params.begin(), view->params.end());
  // The view keeps writers out, so reading the optimizer here is safe.
  state.optimizer = core_.optimizer.ExportState();
  return state;
}

absl::Status PsShard::ImportState(ParameterState state, absl::Time deadline) {
  if (state.params.size() != size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(core_.Describe(), ": the seed holds ", state.params.size(),
                     " parameters; the shard owns ", size()));
  }
  if (state.step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(core_.Describe(), ": the seed's step is ", state.step,
                     "; it must be >= 0"));
  }
  if (state.optimizer.kind != core_.optimizer.kind() ||
      state.optimizer.size != size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        core_.Describe(), ": the seed's optimizer state is ",
        OptimizerKindName(state.optimizer.kind), " over ", state.optimizer.size,
        " elements; the shard runs ", OptimizerKindName(core_.optimizer.kind()),
        " over ", size()));
  }
  RETURN_IF_ERROR(
      Annotate(ValidateOptimizerState(state.optimizer), core_.Describe()));
  deadline = core_.CapDeadline(deadline);
  absl::MutexLock lock(&core_.mu);
  RETURN_IF_ERROR(core_.BeginWriteLocked(deadline, "seeding the shard"));
  // Checked with the parameters held: no push can start meanwhile.
  std::vector<int> busy;
  for (size_t r = 0; r < core_.ranks.size(); ++r) {
    if (core_.ranks[r].pushing || core_.ranks[r].committed) {
      busy.push_back(static_cast<int>(r));
    }
  }
  if (!busy.empty()) {
    core_.views.EndWriteLocked();
    return absl::FailedPreconditionError(absl::StrCat(
        core_.Describe(), ": cannot replace the state while ranks ",
        JoinRanks(busy), " are pushing step ", core_.version,
        "; seed at a step boundary"));
  }
  // Under the lock on purpose: nothing may start a push against the old
  // step while the state changes (a rare, switch-time operation).
  const absl::Status status = core_.optimizer.ImportState(state.optimizer);
  core_.views.EndWriteLocked();
  if (!status.ok()) return Annotate(status, core_.Describe());
  core_.life = ShardLife::kServing;
  core_.params.swap(state.params);
  core_.RoundParamsForWire();
  core_.version = state.step;
  // The decision and the reported epochs stay: an epoch is decided once.
  core_.decider.ResetForSeed();
  for (RankSlot& slot : core_.ranks) slot.next_step = state.step;
  return absl::OkStatus();
}

}  // namespace gradsync
