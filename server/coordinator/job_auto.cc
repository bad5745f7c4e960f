#include "server/coordinator/job_auto.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jobspec/sync_mode_name.h"
#include "jobspec/sync_model_inputs.h"
#include "study/alpha_beta/sync_model.h"

namespace gradsync {

AutoModelView AutoModelViewLocked(const CoordinatorState& state, const Job& job,
                                  int64_t sync_bytes) {
  AutoModelView view;
  if (state.links.bandwidth_Bps <= 0 || sync_bytes <= 0) return view;
  // The hosts of the ranks, and the servers of the shards with theirs.
  std::vector<std::string> rank_hosts;
  for (const RankRecord& rank : job.ranks()) {
    rank_hosts.push_back(rank.slot.host);
  }
  std::vector<std::pair<std::string, std::string>> shard_servers;
  for (const ShardPlacement& shard : job.ps_shards()) {
    const PsRecord* server = state.servers.Find(shard.ps_id);
    shard_servers.emplace_back(shard.ps_id,
                               server != nullptr ? server->host : "");
  }
  const SyncPlacement placement = SyncPlacementOf(rank_hosts, shard_servers);
  // The same inputs as `gradsync explain` (jobspec/sync_model_inputs.h).
  const SyncModelInputs in =
      SyncModelInputsFromSpec(job.spec(), placement, sync_bytes);
  const LinkModel& links = state.links;
  view.ring_s = PredictSeconds(in.ring, links);
  if (placement.servers.empty()) return view;
  if (!ValidateSyncCase(in.ps).ok() || !ValidateSyncCase(in.ring).ok()) {
    return view;
  }
  // With the servers' CPU term for the spec's transport ("" is the
  // workers' default, the plane).
  view.ps_s = PredictWithCpu(in.ps, static_cast<int>(rank_hosts.size()), links,
                             DefaultServerCpu(job.spec().ps().transport()))
                  .seconds;
  view.known = true;
  return view;
}

void RunAutoModeLocked(CoordinatorState& state, JobLifecycle& lifecycle,
                       Job& job) {
  Job::AutoMode* automatic = job.auto_mode();
  if (automatic == nullptr) return;
  for (const AutoStep& step : automatic->steps.TakeFinished()) {
    if (IsFinal(job.state())) return;
    std::optional<AutoSwitch> wanted = automatic->policy.Observe(
        step, AutoModelViewLocked(state, job, step.sync_bytes));
    if (!wanted.has_value()) continue;
    absl::StatusOr<int64_t> epoch = lifecycle.RequestSwitchLocked(
        job, SyncModeOf(wanted->mode), wanted->reason);
    if (!epoch.ok()) {
      state.LogLocked(absl::StrCat(
          "job ", job.id(),
          ": auto mode could not switch: ", epoch.status().message()));
    }
  }
}

}  // namespace gradsync
