#include "server/coordinator/daemon_leases.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

std::string DeviceList(const std::vector<Device>& devices) {
  return absl::StrJoin(devices, ", ", [](std::string* out, const Device& d) {
    absl::StrAppend(out, d.kind(), ":", d.index());
  });
}

}  // namespace

absl::StatusOr<RegisterWorkerResponse> DaemonLeases::RegisterWorker(
    const RegisterWorkerRequest& request) {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(const WorkerRecord* worker,
                   state_.workers.Register(request, state_.Now()));
  state_.LogLocked(absl::StrCat("worker ", worker->id, " registered: host ",
                                worker->host, ", address ", worker->address,
                                ", pid ", worker->pid, ", devices ",
                                DeviceList(worker->devices)));
  RegisterWorkerResponse response;
  response.set_worker_id(worker->id);
  response.set_credential(worker->credential);
  response.set_lease_ms(absl::ToInt64Milliseconds(state_.config.lease));
  response.set_heartbeat_ms(
      absl::ToInt64Milliseconds(state_.config.heartbeat_interval));
  lifecycle_.ScheduleLocked();
  return response;
}

absl::Status DaemonLeases::DeregisterWorker(
    const DeregisterWorkerRequest& request) {
  absl::MutexLock lock(&state_.mu);
  const WorkerRecord* worker = state_.workers.Find(request.worker_id());
  if (worker == nullptr || worker->lost) {
    return absl::NotFoundError(absl::StrCat(
        "worker '", request.worker_id(),
        "' is not registered (unknown, or already declared lost)"));
  }
  RETURN_IF_ERROR(CheckCredential(*worker, request.credential()));
  lifecycle_.DropWorkerLocked(
      request.worker_id(), state_.Now(),
      absl::StrCat("left: ", request.reason().empty() ? std::string("shut down")
                                                      : request.reason()));
  return absl::OkStatus();
}

absl::Status DaemonLeases::DeregisterParameterServer(
    const DeregisterParameterServerRequest& request) {
  absl::MutexLock lock(&state_.mu);
  const PsRecord* server = state_.servers.Find(request.ps_id());
  if (server == nullptr || server->lost) {
    return absl::NotFoundError(absl::StrCat(
        "parameter server '", request.ps_id(),
        "' is not registered (unknown, or already declared lost)"));
  }
  RETURN_IF_ERROR(CheckCredential(*server, request.credential()));
  lifecycle_.DropPsLocked(
      request.ps_id(), state_.Now(),
      absl::StrCat("left: ", request.reason().empty() ? std::string("shut down")
                                                      : request.reason()));
  return absl::OkStatus();
}

absl::StatusOr<HeartbeatResponse> DaemonLeases::Heartbeat(
    const HeartbeatRequest& request, absl::Time deadline,
    CancelledFn cancelled) {
  absl::MutexLock lock(&state_.mu);
  WorkerRecord* worker = state_.workers.Find(request.worker_id());
  auto lost_error = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) {
    return absl::NotFoundError(absl::StrFormat(
        "worker %s was declared lost at %s after no heartbeat for the %s "
        "lease; its ranks were stopped and their jobs failed. Register again "
        "to get a new worker id",
        worker->id, absl::FormatTime(worker->lost_time),
        absl::FormatDuration(state_.config.lease)));
  };
  if (worker == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown worker '", request.worker_id(),
                     "'; register again (the coordinator may have restarted)"));
  }
  RETURN_IF_ERROR(CheckCredential(*worker, request.credential()));
  if (worker->lost) return lost_error();
  WorkerRegistry::Renew(*worker, state_.Now());
  FreeEndedLocked(*worker, request);

  const absl::Duration wait =
      std::clamp(absl::Milliseconds(request.wait_ms()), absl::ZeroDuration(),
                 state_.config.lease / 2);
  const absl::Time until = std::min(deadline, absl::Now() + wait);
  const absl::Status status = state_.AwaitLocked(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) {
        return worker->lost || !worker->mailbox.empty();
      },
      until, cancelled);
  if (!status.ok() && status.code() != absl::StatusCode::kDeadlineExceeded) {
    return status;
  }
  if (worker->lost) return lost_error();
  WorkerRegistry::Renew(*worker, state_.Now());

  HeartbeatResponse response;
  Mailbox mailbox = std::exchange(worker->mailbox, Mailbox());
  for (Assignment& assignment : mailbox.assignments) {
    *response.add_assignments() = std::move(assignment);
  }
  for (std::string& id : mailbox.cancel_job_ids) {
    response.add_cancel_job_ids(std::move(id));
  }
  response.set_cancel_reason(absl::StrJoin(mailbox.cancel_reasons, "; "));
  for (SwitchNotice& notice : mailbox.switches) {
    *response.add_switches() = std::move(notice);
  }
  return response;
}

void DaemonLeases::FreeEndedLocked(WorkerRecord& worker,
                                   const HeartbeatRequest& request) {
  const absl::flat_hash_set<std::string> held(request.held_job_ids().begin(),
                                              request.held_job_ids().end());
  const std::vector<std::string> freed =
      WorkerRegistry::FreeEnded(worker, held, [&](absl::string_view job_id) {
        const Job* job = state_.jobs.Find(job_id);
        return job == nullptr || IsFinal(job->state());
      });
  if (freed.empty()) return;
  state_.LogLocked(absl::StrCat("worker ", worker.id, ": the ranks of ",
                                freed.size() == 1 ? "job " : "jobs ",
                                absl::StrJoin(freed, ", "),
                                " have ended; their devices are free"));
  lifecycle_.ScheduleLocked();
}

absl::StatusOr<RegisterParameterServerResponse>
DaemonLeases::RegisterParameterServer(
    const RegisterParameterServerRequest& request) {
  absl::MutexLock lock(&state_.mu);
  const PsRecord* previous =
      state_.servers.FindLiveByAddress(request.address());
  const std::string previous_id = previous == nullptr ? "" : previous->id;
  ASSIGN_OR_RETURN(const PsRecord* server,
                   state_.servers.Register(request, state_.Now()));
  const std::string id = server->id;
  state_.LogLocked(absl::StrCat("parameter server ", id, " registered: host ",
                                server->host, ", address ", server->address,
                                ", pid ", server->pid));
  if (!previous_id.empty()) {
    // Only one process can listen at an address: the old one is gone.
    lifecycle_.DropPsLocked(
        previous_id, state_.Now(),
        absl::StrCat("was replaced: ", id, " registered at the same address"));
  }
  RegisterParameterServerResponse response;
  response.set_ps_id(id);
  response.set_credential(server->credential);
  response.set_shard_key(state_.shard_key);
  response.set_lease_ms(absl::ToInt64Milliseconds(state_.config.lease));
  response.set_heartbeat_ms(
      absl::ToInt64Milliseconds(state_.config.heartbeat_interval));
  lifecycle_.ScheduleLocked();  // jobs waiting for a parameter server
  return response;
}

absl::StatusOr<PsHeartbeatResponse> DaemonLeases::PsHeartbeat(
    const PsHeartbeatRequest& request) {
  for (const ps::ShardStats& shard : request.shards()) {
    if (shard.job_id().empty() || shard.shard() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter server ", request.ps_id(), " reported shard ",
          shard.shard(), " of job '", shard.job_id(),
          "'; a shard needs a job id and an index >= 0 (nothing recorded)"));
    }
  }
  absl::MutexLock lock(&state_.mu);
  PsRecord* server = state_.servers.Find(request.ps_id());
  if (server == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown parameter server '", request.ps_id(),
                     "'; register again (the coordinator may have restarted)"));
  }
  RETURN_IF_ERROR(CheckCredential(*server, request.credential()));
  if (server->lost) {
    return absl::NotFoundError(absl::StrCat(
        "parameter server ", server->id, " was declared lost at ",
        absl::FormatTime(server->lost_time),
        "; the jobs in PS mode with shards on it failed. Drop its shards and "
        "register again to get a new id"));
  }
  PsRegistry::Renew(*server, state_.Now());
  PsHeartbeatResponse response;
  for (const ps::ShardStats& shard : request.shards()) {
    Job* job = state_.jobs.Find(shard.job_id());
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

std::vector<std::string> DaemonLeases::CheckLeases(absl::Time now) {
  absl::MutexLock lock(&state_.mu);
  std::vector<std::string> lost =
      state_.workers.Expired(now, state_.config.lease);
  for (const std::string& worker_id : lost) {
    const WorkerRecord* worker = state_.workers.Find(worker_id);
    lifecycle_.DropWorkerLocked(
        worker_id, now,
        absl::StrFormat("lost: no heartbeat for %.1f s",
                        absl::ToDoubleSeconds(now - worker->last_heartbeat)));
  }
  for (const std::string& ps_id :
       state_.servers.Expired(now, state_.config.lease)) {
    const PsRecord* server = state_.servers.Find(ps_id);
    lifecycle_.DropPsLocked(
        ps_id, now,
        absl::StrFormat("was lost: no heartbeat for %.1f s (lease %s)",
                        absl::ToDoubleSeconds(now - server->last_heartbeat),
                        absl::FormatDuration(state_.config.lease)));
    lost.push_back(ps_id);
  }
  // Restarted jobs wait out a lease (ScheduleLocked); this is their tick.
  if (!state_.jobs.pending().empty()) lifecycle_.ScheduleLocked();
  return lost;
}

int DaemonLeases::RenewAllLocked(absl::Time now) {
  int renewed = 0;
  for (WorkerRecord* worker : state_.workers.AllMutable()) {
    if (worker->lost) continue;
    WorkerRegistry::Renew(*worker, now);
    ++renewed;
  }
  for (const PsRecord* server : state_.servers.Live()) {
    PsRecord* record = state_.servers.Find(server->id);
    if (record == nullptr) continue;
    PsRegistry::Renew(*record, now);
    ++renewed;
  }
  return renewed;
}

}  // namespace gradsync
