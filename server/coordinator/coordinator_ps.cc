// CoordinatorService: parameter servers (registration, heartbeats with
// shard counters, leases), PS shard placement and runtime switches.
#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/coordinator/coordinator_service.h"
#include "server/coordinator/job_spec.h"

namespace gradsync {
namespace {

absl::string_view ModeWord(SyncMode mode) {
  return mode == SYNC_MODE_PS ? "PS" : "RING";
}

// "shard 1 of 2" or "shards 0, 2 of 4".
std::string ShardList(const std::vector<int>& shards, int total) {
  return absl::StrCat(shards.size() == 1 ? "shard " : "shards ",
                      absl::StrJoin(shards, ", "), " of ", total);
}

}  // namespace

std::string SwitchDirectiveKey(int64_t epoch) {
  return absl::StrCat("switch/", epoch);
}

bool CoordinatorService::NeedsPs(const Job& job) {
  return JobNeedsPs(job.spec()) || job.requested_mode() == SYNC_MODE_PS;
}

// ---- placement ----

absl::Status CoordinatorService::PlaceShardsLocked(Job& job) {
  std::vector<const PsRecord*> live = servers_.Live();
  if (live.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.id(), " needs parameter-server shards but ",
                     kNoParameterServerMessage));
  }
  // The hosts of the job's ranks, in rank order (first rank first).
  std::vector<std::string> rank_hosts;
  for (const RankRecord& rank : job.ranks()) {
    if (std::find(rank_hosts.begin(), rank_hosts.end(), rank.slot.host) ==
        rank_hosts.end()) {
      rank_hosts.push_back(rank.slot.host);
    }
  }
  const std::string& placement = job.spec().ps().placement();
  auto host_order = [&](const PsRecord* server) {
    return static_cast<int>(
        std::find(rank_hosts.begin(), rank_hosts.end(), server->host) -
        rank_hosts.begin());
  };
  const int no_rank = static_cast<int>(rank_hosts.size());
  if (placement == "separate" || placement == "colocated") {
    const bool colocated = placement == "colocated";
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const PsRecord* server) {
                                return (host_order(server) < no_rank) !=
                                       colocated;
                              }),
               live.end());
    if (live.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", job.id(), " asks for ", placement,
          " parameter servers (ps.placement), but no live server runs ",
          colocated ? "on" : "off", " the hosts of its ranks (",
          absl::StrJoin(rank_hosts, ", "), "); start gradsync-ps ",
          colocated ? "on those hosts" : "on other hosts",
          " or submit with --ps-placement any"));
    }
  }
  // Load: shards of the other jobs that have not ended.
  absl::flat_hash_map<std::string, int> load;
  for (const Job* other : jobs_.All()) {
    if (other == &job || IsFinal(other->state())) continue;
    for (const ShardPlacement& shard : other->ps_shards()) ++load[shard.ps_id];
  }
  // Colocated: shard k on the k-th host in rank order, then by load.
  const bool by_host = placement == "colocated";
  std::stable_sort(live.begin(), live.end(),
                   [&](const PsRecord* a, const PsRecord* b) {
                     return std::make_tuple(by_host ? host_order(a) : 0,
                                            load[a->id], a->number) <
                            std::make_tuple(by_host ? host_order(b) : 0,
                                            load[b->id], b->number);
                   });
  const int count = job.spec().ps().shards() > 0
                        ? job.spec().ps().shards()
                        : static_cast<int>(live.size());
  std::vector<ShardPlacement> shards;
  shards.reserve(count);
  std::vector<std::string> where;
  for (int k = 0; k < count; ++k) {
    const PsRecord* server = live[k % live.size()];
    shards.push_back({server->id, server->address});
    where.push_back(absl::StrCat(k, " on ", server->id, " (", server->address,
                                 ", host ", server->host, ")"));
  }
  job.SetPsShards(std::move(shards));
  LogLocked(absl::StrCat("job ", job.id(),
                         " PS shards: ", absl::StrJoin(where, ", ")));
  return absl::OkStatus();
}

bool CoordinatorService::HasLostShardLocked(const Job& job) const {
  for (const ShardPlacement& shard : job.ps_shards()) {
    const PsRecord* server = servers_.Find(shard.ps_id);
    if (server == nullptr || server->lost) return true;
  }
  return false;
}

// ---- runtime switches ----

void CoordinatorService::AnnounceSwitchLocked(Job& job) {
  const int64_t epoch = job.switch_requests();
  SwitchDirective directive;
  directive.set_epoch(epoch);
  directive.set_mode(job.requested_mode());
  for (const ShardPlacement& shard : job.ps_shards()) {
    directive.add_ps_addresses(shard.address);
  }
  const std::string key = absl::StrCat(
      JobStorePrefix(job.id(), job.generation()), SwitchDirectiveKey(epoch));
  if (absl::Status status = store_.Set(key, directive.SerializeAsString());
      !status.ok()) {
    LogLocked(absl::StrCat("job ", job.id(), ": could not store ", key, ": ",
                           status.message()));
  }
  for (const std::string& worker_id : job.WorkerIds()) {
    WorkerRecord* worker = workers_.Find(worker_id);
    if (worker == nullptr || worker->lost) continue;
    std::vector<SwitchNotice>& notices = worker->mailbox.switches;
    auto it = std::find_if(
        notices.begin(), notices.end(),
        [&](const SwitchNotice& n) { return n.job_id() == job.id(); });
    if (it == notices.end()) it = notices.insert(notices.end(), SwitchNotice());
    it->set_job_id(job.id());
    it->set_epoch(epoch);
  }
  LogLocked(absl::StrCat("job ", job.id(), " switch request ", epoch, " to ",
                         ModeWord(job.requested_mode()), " sent to ",
                         absl::StrJoin(job.WorkerIds(), ", ")));
}

absl::StatusOr<SwitchJobResponse> CoordinatorService::SwitchJob(
    const SwitchJobRequest& request) {
  const SyncMode mode = request.mode();
  if (mode != SYNC_MODE_RING && mode != SYNC_MODE_PS) {
    return absl::InvalidArgumentError(
        absl::StrCat("switch mode is ", static_cast<int>(mode),
                     "; use SYNC_MODE_RING or SYNC_MODE_PS (ring or ps)"));
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Job * job, FindJobLocked(request.job_id()));
  ASSIGN_OR_RETURN(const int64_t epoch, SwitchJobLocked(*job, mode, ""));
  SwitchJobResponse response;
  response.set_epoch(epoch);
  *response.mutable_status() = job->Status();
  return response;
}

absl::StatusOr<int64_t> CoordinatorService::SwitchJobLocked(
    Job& job, SyncMode mode, std::string reason) {
  if (IsFinal(job.state())) {
    return JobEndedError(job, "there is nothing to switch");
  }
  const bool pending = job.state() == JOB_STATE_PENDING;
  if (mode == SYNC_MODE_PS) {
    if (servers_.Live().empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot switch job ", job.id(),
                       " to PS: ", kNoParameterServerMessage));
    }
    // A pending job gets its shards with its ranks (ScheduleLocked).
    if (!pending && (job.ps_shards().empty() || HasLostShardLocked(job))) {
      RETURN_IF_ERROR(PlaceShardsLocked(job));
    }
  }
  if (!reason.empty()) {
    LogLocked(absl::StrCat("job ", job.id(), " ", reason));
  }
  const int64_t epoch = job.AddSwitchRequest(mode, std::move(reason));
  if (!pending) AnnounceSwitchLocked(job);
  return epoch;
}

// ---- parameter servers ----

absl::StatusOr<RegisterParameterServerResponse>
CoordinatorService::RegisterParameterServer(
    const RegisterParameterServerRequest& request) {
  absl::MutexLock lock(&mu_);
  const PsRecord* previous = servers_.FindLiveByAddress(request.address());
  const std::string previous_id = previous == nullptr ? "" : previous->id;
  ASSIGN_OR_RETURN(const PsRecord* server, servers_.Register(request, Now()));
  const std::string id = server->id;
  LogLocked(absl::StrCat("parameter server ", id, " registered: host ",
                         server->host, ", address ", server->address, ", pid ",
                         server->pid));
  if (!previous_id.empty()) {
    // Only one process can listen at an address: the old one is gone.
    DropPsLocked(
        previous_id, Now(),
        absl::StrCat("was replaced: ", id, " registered at the same address"));
  }
  RegisterParameterServerResponse response;
  response.set_ps_id(id);
  response.set_lease_ms(absl::ToInt64Milliseconds(config_.lease));
  response.set_heartbeat_ms(
      absl::ToInt64Milliseconds(config_.heartbeat_interval));
  ScheduleLocked();  // jobs waiting for a parameter server
  return response;
}

absl::StatusOr<PsHeartbeatResponse> CoordinatorService::PsHeartbeat(
    const PsHeartbeatRequest& request) {
  for (const ps::ShardStats& shard : request.shards()) {
    if (shard.job_id().empty() || shard.shard() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter server ", request.ps_id(), " reported shard ",
          shard.shard(), " of job '", shard.job_id(),
          "'; a shard needs a job id and an index >= 0 (nothing recorded)"));
    }
  }
  absl::MutexLock lock(&mu_);
  PsRecord* server = servers_.Find(request.ps_id());
  if (server == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown parameter server '", request.ps_id(),
                     "'; register again (the coordinator may have restarted)"));
  }
  if (server->lost) {
    return absl::NotFoundError(absl::StrCat(
        "parameter server ", server->id, " was declared lost at ",
        absl::FormatTime(server->lost_time),
        "; the jobs in PS mode with shards on it failed. Drop its shards and "
        "register again to get a new id"));
  }
  PsRegistry::Renew(*server, Now());
  PsHeartbeatResponse response;
  for (const ps::ShardStats& shard : request.shards()) {
    Job* job = jobs_.Find(shard.job_id());
    if (job != nullptr) job->SetShardStats(shard);
    if (job != nullptr && !IsFinal(job->state())) continue;
    const auto& released = response.release_job_ids();
    if (std::find(released.begin(), released.end(), shard.job_id()) ==
        released.end()) {
      response.add_release_job_ids(shard.job_id());
    }
  }
  return response;
}

void CoordinatorService::DropPsLocked(const std::string& ps_id, absl::Time now,
                                      absl::string_view why) {
  PsRecord* server = servers_.Find(ps_id);
  PsRegistry::MarkLost(*server, now);
  LogLocked(absl::StrCat("parameter server ", ps_id, " at ", server->address,
                         " ", why));
  std::vector<std::string> job_ids;
  for (const Job* job : jobs_.All()) {
    if (job->state() != JOB_STATE_RENDEZVOUS &&
        job->state() != JOB_STATE_RUNNING) {
      continue;
    }
    if (job->CurrentMode() != SYNC_MODE_PS) continue;
    if (!job->ShardsOn(ps_id).empty()) job_ids.push_back(job->id());
  }
  for (const std::string& job_id : job_ids) {
    Job* job = jobs_.Find(job_id);
    if (job == nullptr || IsFinal(job->state())) continue;
    EndJobLocked(
        *job, JOB_STATE_FAILED,
        absl::StrCat("parameter server ", ps_id, " at ", server->address, " (",
                     ShardList(job->ShardsOn(ps_id),
                               static_cast<int>(job->ps_shards().size())),
                     ") ", why, "; restart it and resubmit the job"));
  }
}

}  // namespace gradsync
