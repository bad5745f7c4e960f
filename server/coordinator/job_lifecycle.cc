#include "server/coordinator/job_lifecycle.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "jobspec/job_memory.h"
#include "models/link_probe/link_probe_spec.h"
#include "security/secret.h"
#include "server/coordinator/job_scheduler.h"
#include "server/coordinator/ps_placement.h"

namespace gradsync {
namespace {

// "rank 2" or "ranks 2, 3".
std::string RankList(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(ranks, ", "));
}

// "shard 1 of 2" or "shards 0, 2 of 4".
std::string ShardList(const std::vector<int>& shards, int total) {
  return absl::StrCat(shards.size() == 1 ? "shard " : "shards ",
                      absl::StrJoin(shards, ", "), " of ", total);
}

absl::string_view ModeWord(SyncMode mode) {
  return mode == SYNC_MODE_PS ? "PS" : "RING";
}

}  // namespace

void JobLifecycle::ScheduleLocked() {
  const SchedulePlan plan = PlanSchedule(
      state_.jobs, state_.workers.Inventory([&](absl::string_view job_id) {
        const Job* job = state_.jobs.Find(job_id);
        return job == nullptr ? 0 : EstimateRankMemory(job->spec()).total();
      }),
      !state_.servers.Live().empty(), state_.Now(), state_.config.lease);
  for (const std::string& id : plan.stale) state_.jobs.RemovePending(id);
  bool plan_again = false;
  for (const JobPlacement& placement : plan.placements) {
    const std::string& id = placement.job_id;
    Job* job = state_.jobs.Find(id);
    state_.jobs.RemovePending(id);
    state_.workers.Assign(id, placement.slots);
    if (absl::Status status = job->Place(placement.slots, state_.Now());
        !status.ok()) {
      state_.workers.Release(id);
      state_.LogLocked(
          absl::StrCat("job ", id, " could not be placed: ", status.message()));
      // Its devices are free again: the jobs after it may fit now.
      plan_again = true;
      continue;
    }
    if (JobNeedsShardsNow(*job)) {
      // A live server exists (the plan checked); a placement that none
      // meets (ps.placement) fails the job, which frees its devices.
      if (absl::Status status = PlaceShardsLocked(*job); !status.ok()) {
        state_.LogLocked(absl::StrCat("job ", id, ": ", status.message()));
        EndLocked(*job, JOB_STATE_FAILED, std::string(status.message()));
        // No worker was told of it, so no rank of it runs anywhere.
        state_.workers.Release(id);
        plan_again = true;
        continue;
      }
    }
    MailAssignmentsLocked(*job);
    // Switch requests made while the job waited: the newest one's notice
    // follows the assignments in the same mailboxes.
    if (job->switch_requests() > 0) AnnounceSwitchLocked(*job);
  }
  if (plan_again) {
    ScheduleLocked();
    return;
  }
  if (!plan.waiting_job.empty()) {
    state_.jobs.Find(plan.waiting_job)->SetMessage(plan.waiting_message);
  }
}

void JobLifecycle::MailAssignmentsLocked(const Job& job) {
  std::vector<std::string> placement;
  absl::flat_hash_map<std::string, int> ranks_on_host;
  for (const std::string& worker_id : job.WorkerIds()) {
    ranks_on_host[state_.workers.Find(worker_id)->host] +=
        static_cast<int>(job.RanksOn(worker_id).size());
  }
  std::vector<ProbeServer> probe_servers;
  if (IsLinkProbe(job.spec())) {
    std::set<std::string> rank_hosts;
    for (const auto& [host, ranks] : ranks_on_host) rank_hosts.insert(host);
    probe_servers = state_.servers.ProbeTargets(rank_hosts);
  }
  for (const std::string& worker_id : job.WorkerIds()) {
    Assignment assignment;
    assignment.set_job_id(job.id());
    assignment.set_generation(job.generation());
    *assignment.mutable_spec() = job.spec();
    assignment.set_world_size(job.world_size());
    assignment.set_job_secret(job.secret());
    assignment.set_ps_token(PsTokenForJob(state_.shard_key, job.id()));
    const std::vector<int> ranks = job.RanksOn(worker_id);
    for (int r : ranks) {
      assignment.add_ranks(r);
      *assignment.add_devices() = job.ranks()[r].slot.device;
    }
    for (const ShardPlacement& shard : job.ps_shards()) {
      assignment.add_ps_addresses(shard.address);
    }
    for (const ProbeServer& server : probe_servers) {
      *assignment.add_probe_servers() = server;
    }
    WorkerRecord* worker = state_.workers.Find(worker_id);
    assignment.set_ranks_on_host(ranks_on_host[worker->host]);
    placement.push_back(absl::StrCat(RankList(ranks), " on ", worker_id,
                                     " (host ", worker->host, ")"));
    worker->mailbox.assignments.push_back(std::move(assignment));
  }
  for (const ProbeServer& server : probe_servers) {
    placement.push_back(absl::StrCat("probing parameter server ",
                                     server.ps_id(), " (host ", server.host(),
                                     ") at ", server.plane_address()));
  }
  state_.LogLocked(absl::StrCat(
      "job ", job.id(), " RENDEZVOUS: ", absl::StrJoin(placement, ", ")));
}

JobStatus JobLifecycle::EndLocked(Job& job, JobState state,
                                  const std::string& message) {
  const std::string id = job.id();
  std::string final_message = message;
  if (state == JOB_STATE_FAILED && !IsFinal(job.state()) &&
      job.spec().max_restarts() > 0) {
    absl::StrAppend(&final_message, "; ", RestartLocked(job));
  }
  if (absl::Status status =
          job.TransitionTo(state, final_message, state_.Now());
      !status.ok()) {
    state_.LogLocked(status.message());
    return job.Status();
  }
  // Its devices stay held until each worker's heartbeat says the job's
  // ranks are gone (DaemonLeases::Heartbeat, WorkerRegistry::FreeEnded):
  // a cancelled job's ranks may still be stopping, and giving their devices
  // to the next job at once let a submit/cancel storm pile up jobs on a
  // worker until it ran out of memory. A worker that never got the
  // assignment frees them below; a lost worker already has.
  state_.store.EraseWithPrefix(absl::StrCat("job/", id, "/"));
  state_.saver.ErasePrefix(absl::StrCat("job/", id, "/"));
  job.ClearBarriers();
  const std::string reason = absl::StrCat(
      "job ", id, " ",
      state == JOB_STATE_CANCELLED ? "was cancelled" : "failed", ": ", message);
  for (const std::string& worker_id : job.WorkerIds()) {
    WorkerRecord* worker = state_.workers.Find(worker_id);
    if (worker == nullptr || worker->lost) continue;
    std::vector<SwitchNotice>& notices = worker->mailbox.switches;
    notices.erase(
        std::remove_if(notices.begin(), notices.end(),
                       [&](const SwitchNotice& n) { return n.job_id() == id; }),
        notices.end());
    // An assignment not collected yet is simply withdrawn: no rank of the
    // job ever ran there, so its devices are free at once.
    std::vector<Assignment>& assignments = worker->mailbox.assignments;
    const auto undelivered =
        std::remove_if(assignments.begin(), assignments.end(),
                       [&](const Assignment& a) { return a.job_id() == id; });
    if (undelivered != assignments.end()) {
      assignments.erase(undelivered, assignments.end());
      WorkerRegistry::ReleaseOn(*worker, id);
      continue;
    }
    if (state != JOB_STATE_SUCCEEDED) {
      worker->mailbox.cancel_job_ids.push_back(id);
      worker->mailbox.cancel_reasons.push_back(reason);
    }
  }
  state_.LogLocked(absl::StrCat("job ", id, " ", JobStateName(state),
                                message.empty() ? "" : ": ", message));
  JobStatus final_status = job.Status();
  for (const std::string& dropped : state_.jobs.Retire(id)) {
    state_.LogLocked(
        absl::StrCat("job ", dropped, " dropped from the job table"));
  }
  ScheduleLocked();
  return final_status;
}

std::string JobLifecycle::RestartLocked(Job& failed) {
  JobSpec spec = failed.spec();
  spec.set_max_restarts(spec.max_restarts() - 1);
  spec.set_restart_count(spec.restart_count() + 1);
  const std::string& checkpoint = failed.last_checkpoint();
  if (!checkpoint.empty()) {
    spec.mutable_checkpoint()->set_resume_from(checkpoint);
  }
  Job* restart = state_.jobs.Create(std::move(spec), state_.Now());
  restart->set_restart_of(failed.id());
  restart->set_not_before(state_.Now() + state_.config.lease);
  failed.set_restarted_as(restart->id());
  const std::string& started_from = failed.spec().checkpoint().resume_from();
  std::string from;
  if (!checkpoint.empty()) {
    from = absl::StrCat("from its checkpoint ", checkpoint);
  } else if (started_from.empty()) {
    from = "from step 0 (it wrote no checkpoint)";
  } else {
    from =
        absl::StrCat("from ", started_from, " again (it wrote no checkpoint)");
  }
  state_.LogLocked(absl::StrCat("job ", restart->id(),
                                " submitted: restarts job ", failed.id(), " ",
                                from));
  return absl::StrCat("restarted as ", restart->id(), " ", from, " (",
                      restart->spec().max_restarts(),
                      " more restarts allowed)");
}

void JobLifecycle::DropWorkerLocked(const std::string& worker_id,
                                    absl::Time now, absl::string_view why) {
  WorkerRecord* worker = state_.workers.Find(worker_id);
  // The jobs to fail, found before MarkLost forgets the worker's devices.
  std::vector<std::string> job_ids;
  for (const Job* job : state_.jobs.All()) {
    if (!IsFinal(job->state()) && !job->RanksOn(worker_id).empty()) {
      job_ids.push_back(job->id());
    }
  }
  WorkerRegistry::MarkLost(*worker, now);
  state_.LogLocked(
      absl::StrCat("worker ", worker_id, " on host ", worker->host, " ", why));
  for (const std::string& job_id : job_ids) {
    Job* job = state_.jobs.Find(job_id);
    if (job == nullptr || IsFinal(job->state())) continue;
    const std::vector<int> ranks = job->RanksOn(worker_id);
    int64_t last_step = -1;
    for (int r : ranks) {
      last_step = std::max(last_step, job->ranks()[r].last_step);
    }
    EndLocked(
        *job, JOB_STATE_FAILED,
        absl::StrCat("worker ", worker_id, " on host ", worker->host, " (",
                     RankList(ranks), ") ", why, "; ",
                     last_step < 0
                         ? std::string("no step reported yet")
                         : absl::StrCat("last step reported ", last_step),
                     "; check that worker's log (did the daemon die, stop "
                     "or lose its network?), then resubmit the job"));
  }
}

void JobLifecycle::DropPsLocked(const std::string& ps_id, absl::Time now,
                                absl::string_view why) {
  PsRecord* server = state_.servers.Find(ps_id);
  PsRegistry::MarkLost(*server, now);
  state_.LogLocked(absl::StrCat("parameter server ", ps_id, " at ",
                                server->address, " ", why));
  std::vector<std::string> job_ids;
  for (const Job* job : state_.jobs.All()) {
    if (job->state() != JOB_STATE_RENDEZVOUS &&
        job->state() != JOB_STATE_RUNNING) {
      continue;
    }
    if (job->CurrentMode() != SYNC_MODE_PS) continue;
    if (!job->ShardsOn(ps_id).empty()) job_ids.push_back(job->id());
  }
  for (const std::string& job_id : job_ids) {
    Job* job = state_.jobs.Find(job_id);
    if (job == nullptr || IsFinal(job->state())) continue;
    EndLocked(
        *job, JOB_STATE_FAILED,
        absl::StrCat("parameter server ", ps_id, " at ", server->address, " (",
                     ShardList(job->ShardsOn(ps_id),
                               static_cast<int>(job->ps_shards().size())),
                     ") ", why, "; restart it and resubmit the job"));
  }
}

absl::StatusOr<int64_t> JobLifecycle::RequestSwitchLocked(Job& job,
                                                          SyncMode mode,
                                                          std::string reason) {
  if (IsFinal(job.state())) {
    return JobEndedError(job, "there is nothing to switch");
  }
  const bool pending = job.state() == JOB_STATE_PENDING;
  if (mode == SYNC_MODE_PS) {
    if (state_.servers.Live().empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot switch job ", job.id(),
                       " to PS: ", kNoParameterServerMessage));
    }
    // A pending job gets its shards with its ranks (ScheduleLocked).
    if (!pending &&
        (job.ps_shards().empty() || HasLostShard(job, state_.servers))) {
      RETURN_IF_ERROR(PlaceShardsLocked(job));
    }
  }
  if (!reason.empty())
    state_.LogLocked(absl::StrCat("job ", job.id(), " ", reason));
  const int64_t epoch = job.AddSwitchRequest(mode, std::move(reason));
  if (!pending) AnnounceSwitchLocked(job);
  return epoch;
}

absl::Status JobLifecycle::PlaceShardsLocked(Job& job) {
  std::vector<const PsRecord*> live = state_.servers.Live();
  if (live.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.id(), " needs parameter-server shards but ",
                     kNoParameterServerMessage));
  }
  ASSIGN_OR_RETURN(
      std::vector<ShardPlacement> shards,
      PlaceJobShards(job, std::move(live), ShardLoad(state_.jobs, &job)));
  std::vector<std::string> where;
  for (size_t k = 0; k < shards.size(); ++k) {
    where.push_back(
        absl::StrCat(k, " on ", shards[k].ps_id, " (", shards[k].address, ")"));
  }
  job.SetPsShards(std::move(shards));
  state_.LogLocked(absl::StrCat("job ", job.id(),
                                " PS shards: ", absl::StrJoin(where, ", ")));
  return absl::OkStatus();
}

void JobLifecycle::AnnounceSwitchLocked(Job& job) {
  const int64_t epoch = job.switch_requests();
  SwitchDirective directive;
  directive.set_epoch(epoch);
  directive.set_mode(job.requested_mode());
  for (const ShardPlacement& shard : job.ps_shards()) {
    directive.add_ps_addresses(shard.address);
  }
  const std::string key = absl::StrCat(
      JobStorePrefix(job.id(), job.generation()), SwitchDirectiveKey(epoch));
  if (absl::Status status =
          state_.store.Set(key, directive.SerializeAsString());
      !status.ok()) {
    state_.LogLocked(absl::StrCat("job ", job.id(), ": could not store ", key,
                                  ": ", status.message()));
  } else {
    state_.saver.SetKey(key, directive.SerializeAsString());
  }
  for (const std::string& worker_id : job.WorkerIds()) {
    WorkerRecord* worker = state_.workers.Find(worker_id);
    if (worker == nullptr || worker->lost) continue;
    std::vector<SwitchNotice>& notices = worker->mailbox.switches;
    auto it = std::find_if(
        notices.begin(), notices.end(),
        [&](const SwitchNotice& n) { return n.job_id() == job.id(); });
    if (it == notices.end()) it = notices.insert(notices.end(), SwitchNotice());
    it->set_job_id(job.id());
    it->set_epoch(epoch);
  }
  state_.LogLocked(absl::StrCat("job ", job.id(), " switch request ", epoch,
                                " to ", ModeWord(job.requested_mode()),
                                " sent to ",
                                absl::StrJoin(job.WorkerIds(), ", ")));
}

}  // namespace gradsync
