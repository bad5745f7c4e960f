#include "server/coordinator/job_auto.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sync_model.h"
#include "jobspec/job_spec.h"

namespace gradsync {

AutoModelView AutoModelViewLocked(const CoordinatorState& state, const Job& job,
                                  int64_t sync_bytes) {
  AutoModelView view;
  if (state.links.bandwidth_Bps <= 0 || sync_bytes <= 0) return view;
  // The hosts of the ranks, and of the distinct servers of the shards.
  std::vector<std::string> rank_hosts, servers;
  for (const RankRecord& rank : job.ranks()) {
    if (std::find(rank_hosts.begin(), rank_hosts.end(), rank.slot.host) ==
        rank_hosts.end()) {
      rank_hosts.push_back(rank.slot.host);
    }
  }
  bool colocated = !job.ps_shards().empty();
  for (const ShardPlacement& shard : job.ps_shards()) {
    if (std::find(servers.begin(), servers.end(), shard.ps_id) !=
        servers.end()) {
      continue;
    }
    servers.push_back(shard.ps_id);
    const PsRecord* server = state.servers.Find(shard.ps_id);
    colocated = colocated && server != nullptr &&
                std::find(rank_hosts.begin(), rank_hosts.end(), server->host) !=
                    rank_hosts.end();
  }
  // The model counts hosts: ranks that share one share its link.
  const int hosts = static_cast<int>(rank_hosts.size());
  const LinkModel& links = state.links;
  SyncCase ring;
  ring.layout = SyncLayout::kRing;
  ring.workers = hosts;
  ring.bytes = static_cast<double>(sync_bytes);
  view.ring_s = PredictSeconds(ring, links);
  if (servers.empty()) return view;
  SyncCase ps;
  ps.layout = colocated ? SyncLayout::kPsColocated : SyncLayout::kPsSeparate;
  ps.workers = hosts;
  ps.shards =
      std::min<int>(static_cast<int>(servers.size()),
                    colocated ? hosts : static_cast<int>(servers.size()));
  ps.bytes = static_cast<double>(sync_bytes);
  ps.pipelined = true;
  // The partitions its PS slices are pushed in, as the workers read them.
  ps.partition_bytes = static_cast<double>(PsPartitionBytes(job.spec().ps()));
  if (!ValidateSyncCase(ps).ok() || !ValidateSyncCase(ring).ok()) return view;
  view.ps_s = PredictSeconds(ps, links);
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
    absl::StatusOr<int64_t> epoch =
        lifecycle.RequestSwitchLocked(job, wanted->mode, wanted->reason);
    if (!epoch.ok()) {
      state.LogLocked(absl::StrCat(
          "job ", job.id(),
          ": auto mode could not switch: ", epoch.status().message()));
    }
  }
}

}  // namespace gradsync
