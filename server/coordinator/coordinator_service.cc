// CoordinatorService: lifecycle, workers and leases, jobs and scheduling.
// The rendezvous calls are in coordinator_rendezvous.cc, rank reports,
// metrics and watching in coordinator_progress.cc, parameter servers, shard
// placement and runtime switches in coordinator_ps.cc.
#include "server/coordinator/coordinator_service.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/coordinator/job_spec.h"

namespace gradsync {
namespace {

// "rank 2" or "ranks 2, 3".
std::string RankList(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(ranks, ", "));
}

std::string DeviceList(const std::vector<Device>& devices) {
  return absl::StrJoin(devices, ", ", [](std::string* out, const Device& d) {
    absl::StrAppend(out, d.kind(), ":", d.index());
  });
}

}  // namespace

std::string JobStorePrefix(absl::string_view job_id, int64_t generation) {
  return absl::StrCat("job/", job_id, "/gen/", generation, "/");
}

absl::StatusOr<std::unique_ptr<CoordinatorService>> CoordinatorService::Create(
    CoordinatorConfig config) {
  RETURN_IF_ERROR(ValidateCoordinatorConfig(config));
  if (!config.clock) config.clock = [] { return absl::Now(); };
  return std::unique_ptr<CoordinatorService>(
      new CoordinatorService(std::move(config)));
}

CoordinatorService::CoordinatorService(CoordinatorConfig config)
    : config_(std::move(config)), jobs_(config_.retained_ended_jobs) {}

CoordinatorService::~CoordinatorService() { Shutdown(); }

void CoordinatorService::StartLeaseChecks() {
  absl::MutexLock thread_lock(&thread_mu_);
  if (lease_thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
  }
  lease_thread_ = std::thread([this] { LeaseCheckLoop(); });
}

void CoordinatorService::LeaseCheckLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&shutting_down_),
                               config_.lease_check_interval)) {
        return;
      }
    }
    CheckLeases(Now());
  }
}

void CoordinatorService::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  absl::MutexLock thread_lock(&thread_mu_);
  if (lease_thread_.joinable()) lease_thread_.join();
}

absl::Status CoordinatorService::AwaitLocked(absl::FunctionRef<bool()> ready,
                                             absl::Time deadline,
                                             CancelledFn cancelled) {
  auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutting_down_ || ready();
  };
  for (;;) {
    if (ready()) return absl::OkStatus();
    if (shutting_down_) {
      return absl::UnavailableError(
          "the coordinator is shutting down; retry against its replacement");
    }
    if (cancelled()) {
      return absl::CancelledError("the caller cancelled the call or went away");
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError("the deadline passed");
    }
    mu_.AwaitWithDeadline(absl::Condition(&wake),
                          std::min(deadline, now + config_.wait_slice));
  }
}

absl::StatusOr<Job*> CoordinatorService::FindJobLocked(
    absl::string_view job_id) const {
  Job* job = const_cast<JobTable&>(jobs_).Find(job_id);
  if (job == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "unknown job '", job_id,
        "'; `gradsync status` lists the jobs the coordinator knows (it keeps "
        "the last ",
        config_.retained_ended_jobs, " ended jobs)"));
  }
  return job;
}

void CoordinatorService::LogLocked(absl::string_view line) const {
  if (config_.event_log) config_.event_log(line);
}

// ---- workers ----

absl::StatusOr<RegisterWorkerResponse> CoordinatorService::RegisterWorker(
    const RegisterWorkerRequest& request) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const WorkerRecord* worker,
                   workers_.Register(request, Now()));
  LogLocked(absl::StrCat("worker ", worker->id, " registered: host ",
                         worker->host, ", address ", worker->address, ", pid ",
                         worker->pid, ", devices ",
                         DeviceList(worker->devices)));
  RegisterWorkerResponse response;
  response.set_worker_id(worker->id);
  response.set_lease_ms(absl::ToInt64Milliseconds(config_.lease));
  response.set_heartbeat_ms(
      absl::ToInt64Milliseconds(config_.heartbeat_interval));
  ScheduleLocked();
  return response;
}

absl::StatusOr<HeartbeatResponse> CoordinatorService::Heartbeat(
    const HeartbeatRequest& request, absl::Time deadline,
    CancelledFn cancelled) {
  absl::MutexLock lock(&mu_);
  WorkerRecord* worker = workers_.Find(request.worker_id());
  auto lost_error = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return absl::NotFoundError(absl::StrFormat(
        "worker %s was declared lost at %s after no heartbeat for the %s "
        "lease; its ranks were stopped and their jobs failed. Register again "
        "to get a new worker id",
        worker->id, absl::FormatTime(worker->lost_time),
        absl::FormatDuration(config_.lease)));
  };
  if (worker == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown worker '", request.worker_id(),
                     "'; register again (the coordinator may have restarted)"));
  }
  if (worker->lost) return lost_error();
  WorkerRegistry::Renew(*worker, Now());

  const absl::Duration wait =
      std::clamp(absl::Milliseconds(request.wait_ms()), absl::ZeroDuration(),
                 config_.lease / 2);
  const absl::Time until = std::min(deadline, absl::Now() + wait);
  const absl::Status status =
      AwaitLocked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                      mu_) { return worker->lost || !worker->mailbox.empty(); },
                  until, cancelled);
  if (!status.ok() && status.code() != absl::StatusCode::kDeadlineExceeded) {
    return status;
  }
  if (worker->lost) return lost_error();
  WorkerRegistry::Renew(*worker, Now());

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

// ---- leases ----

std::vector<std::string> CoordinatorService::CheckLeases(absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> lost = workers_.Expired(now, config_.lease);
  for (const std::string& worker_id : lost) {
    const WorkerRecord* worker = workers_.Find(worker_id);
    DropWorkerLocked(
        worker_id, now,
        absl::StrFormat("lost: no heartbeat for %.1f s",
                        absl::ToDoubleSeconds(now - worker->last_heartbeat)));
  }
  for (const std::string& ps_id : servers_.Expired(now, config_.lease)) {
    const PsRecord* server = servers_.Find(ps_id);
    DropPsLocked(
        ps_id, now,
        absl::StrFormat("was lost: no heartbeat for %.1f s (lease %s)",
                        absl::ToDoubleSeconds(now - server->last_heartbeat),
                        absl::FormatDuration(config_.lease)));
    lost.push_back(ps_id);
  }
  // Restarted jobs wait out a lease (ScheduleLocked); this is their tick.
  if (!jobs_.pending().empty()) ScheduleLocked();
  return lost;
}

std::string CoordinatorService::RestartLocked(Job& failed) {
  JobSpec spec = failed.spec();
  spec.set_max_restarts(spec.max_restarts() - 1);
  const std::string& checkpoint = failed.last_checkpoint();
  if (!checkpoint.empty()) {
    spec.mutable_checkpoint()->set_resume_from(checkpoint);
  }
  Job* restart = jobs_.Create(std::move(spec), Now());
  restart->set_restart_of(failed.id());
  restart->set_not_before(Now() + config_.lease);
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
  LogLocked(absl::StrCat("job ", restart->id(), " submitted: restarts job ",
                         failed.id(), " ", from));
  return absl::StrCat("restarted as ", restart->id(), " ", from, " (",
                      restart->spec().max_restarts(),
                      " more restarts allowed)");
}

absl::Status CoordinatorService::DeregisterWorker(
    const DeregisterWorkerRequest& request) {
  absl::MutexLock lock(&mu_);
  const WorkerRecord* worker = workers_.Find(request.worker_id());
  if (worker == nullptr || worker->lost) {
    return absl::NotFoundError(absl::StrCat(
        "worker '", request.worker_id(),
        "' is not registered (unknown, or already declared lost)"));
  }
  DropWorkerLocked(
      request.worker_id(), Now(),
      absl::StrCat("left: ", request.reason().empty() ? std::string("shut down")
                                                      : request.reason()));
  return absl::OkStatus();
}

void CoordinatorService::DropWorkerLocked(const std::string& worker_id,
                                          absl::Time now,
                                          absl::string_view why) {
  WorkerRecord* worker = workers_.Find(worker_id);
  // The jobs to fail, found before MarkLost forgets the worker's devices.
  std::vector<std::string> job_ids;
  for (const Job* job : jobs_.All()) {
    if (!IsFinal(job->state()) && !job->RanksOn(worker_id).empty()) {
      job_ids.push_back(job->id());
    }
  }
  WorkerRegistry::MarkLost(*worker, now);
  LogLocked(
      absl::StrCat("worker ", worker_id, " on host ", worker->host, " ", why));
  for (const std::string& job_id : job_ids) {
    Job* job = jobs_.Find(job_id);
    if (job == nullptr || IsFinal(job->state())) continue;
    const std::vector<int> ranks = job->RanksOn(worker_id);
    int64_t last_step = -1;
    for (int r : ranks) {
      last_step = std::max(last_step, job->ranks()[r].last_step);
    }
    EndJobLocked(
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

// ---- jobs ----

absl::StatusOr<SubmitJobResponse> CoordinatorService::SubmitJob(
    const SubmitJobRequest& request) {
  ASSIGN_OR_RETURN(JobSpec spec, ValidateJobSpec(request.spec()));
  absl::MutexLock lock(&mu_);
  const int total = workers_.TotalDevices(spec.device());
  if (spec.num_workers() > total) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the job asks for ", spec.num_workers(), " ranks (numWorkers) on ",
        spec.device(), " devices but the live workers have only ", total, " (",
        workers_.DescribeDevices(spec.device()),
        "); start more workers (one rank per device) or lower numWorkers"));
  }
  if (JobNeedsPs(spec) && servers_.Live().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the job synchronises through parameter-server shards (",
        spec.mode() == SYNC_MODE_PS ? "mode PS" : "a scripted switch to PS",
        ") but ", kNoParameterServerMessage));
  }
  Job* job = jobs_.Create(std::move(spec), Now());
  LogLocked(absl::StrCat(
      "job ", job->id(), " submitted: ", job->spec().num_workers(),
      " ranks on ", job->spec().device(), ", name '", job->spec().name(), "'"));
  SubmitJobResponse response;
  response.set_job_id(job->id());
  ScheduleLocked();
  return response;
}

void CoordinatorService::ScheduleLocked() {
  while (!jobs_.pending().empty()) {
    Job* job = jobs_.Find(jobs_.pending().front());
    if (job == nullptr || job->state() != JOB_STATE_PENDING) {
      jobs_.RemovePending(jobs_.pending().front());
      continue;
    }
    if (Now() < job->not_before()) {
      // The lease check runs this again, and places it after the wait.
      job->SetMessage(absl::StrCat(
          "restarts ", job->restart_of(), " once a lease (",
          absl::FormatDuration(config_.lease),
          ") has passed since it failed, so that the daemons that failed it "
          "are known lost by then"));
      return;
    }
    const JobSpec& spec = job->spec();
    const bool needs_ps = NeedsPs(*job);
    if (needs_ps && servers_.Live().empty()) {
      job->SetMessage(absl::StrCat(
          "waiting for a parameter server (every registered one was lost): ",
          kNoParameterServerMessage, "; it starts when one registers"));
      return;
    }
    std::optional<std::vector<DeviceSlot>> slots =
        workers_.Allocate(job->id(), spec.device(), spec.num_workers());
    if (!slots.has_value()) {
      const int total = workers_.TotalDevices(spec.device());
      job->SetMessage(absl::StrCat(
          "waiting for ", spec.num_workers(), " free ", spec.device(),
          " devices (", workers_.FreeDevices(spec.device()), " free of ", total,
          ": ", workers_.DescribeDevices(spec.device()), ")",
          total < spec.num_workers()
              ? "; workers were lost: start more workers or cancel the job"
              : "; it starts when earlier jobs end"));
      return;
    }
    const std::string id = job->id();
    jobs_.RemovePending(id);
    if (absl::Status status = job->Place(*std::move(slots), Now());
        !status.ok()) {
      workers_.Release(id);
      LogLocked(
          absl::StrCat("job ", id, " could not be placed: ", status.message()));
      continue;
    }
    if (needs_ps) {
      // A live server exists (checked above); a placement that none
      // satisfies fails the job, which frees its devices again.
      if (absl::Status status = PlaceShardsLocked(*job); !status.ok()) {
        LogLocked(absl::StrCat("job ", id, ": ", status.message()));
        EndJobLocked(*job, JOB_STATE_FAILED, std::string(status.message()));
        continue;
      }
    }
    std::vector<std::string> placement;
    absl::flat_hash_map<std::string, int> ranks_on_host;
    for (const std::string& worker_id : job->WorkerIds()) {
      ranks_on_host[workers_.Find(worker_id)->host] +=
          static_cast<int>(job->RanksOn(worker_id).size());
    }
    for (const std::string& worker_id : job->WorkerIds()) {
      Assignment assignment;
      assignment.set_job_id(id);
      assignment.set_generation(job->generation());
      *assignment.mutable_spec() = job->spec();
      assignment.set_world_size(job->world_size());
      const std::vector<int> ranks = job->RanksOn(worker_id);
      for (int r : ranks) {
        assignment.add_ranks(r);
        *assignment.add_devices() = job->ranks()[r].slot.device;
      }
      for (const ShardPlacement& shard : job->ps_shards()) {
        assignment.add_ps_addresses(shard.address);
      }
      WorkerRecord* worker = workers_.Find(worker_id);
      assignment.set_ranks_on_host(ranks_on_host[worker->host]);
      placement.push_back(absl::StrCat(RankList(ranks), " on ", worker_id,
                                       " (host ", worker->host, ")"));
      worker->mailbox.assignments.push_back(std::move(assignment));
    }
    LogLocked(absl::StrCat("job ", id,
                           " RENDEZVOUS: ", absl::StrJoin(placement, ", ")));
    // Switch requests made while the job waited: the newest one's notice
    // follows the assignments in the same mailboxes.
    if (job->switch_requests() > 0) AnnounceSwitchLocked(*job);
  }
}

JobStatus CoordinatorService::EndJobLocked(Job& job, JobState state,
                                           const std::string& message) {
  const std::string id = job.id();
  std::string final_message = message;
  if (state == JOB_STATE_FAILED && !IsFinal(job.state()) &&
      job.spec().max_restarts() > 0) {
    absl::StrAppend(&final_message, "; ", RestartLocked(job));
  }
  if (absl::Status status = job.TransitionTo(state, final_message, Now());
      !status.ok()) {
    LogLocked(status.message());
    return job.Status();
  }
  workers_.Release(id);
  store_.EraseWithPrefix(absl::StrCat("job/", id, "/"));
  job.ClearBarriers();
  for (const std::string& worker_id : job.WorkerIds()) {
    WorkerRecord* worker = workers_.Find(worker_id);
    if (worker == nullptr) continue;
    std::vector<SwitchNotice>& notices = worker->mailbox.switches;
    notices.erase(
        std::remove_if(notices.begin(), notices.end(),
                       [&](const SwitchNotice& n) { return n.job_id() == id; }),
        notices.end());
  }
  if (state != JOB_STATE_SUCCEEDED) {
    const std::string reason =
        absl::StrCat("job ", id, " ",
                     state == JOB_STATE_CANCELLED ? "was cancelled" : "failed",
                     ": ", message);
    for (const std::string& worker_id : job.WorkerIds()) {
      WorkerRecord* worker = workers_.Find(worker_id);
      if (worker == nullptr || worker->lost) continue;
      // An assignment not collected yet is simply withdrawn.
      std::vector<Assignment>& assignments = worker->mailbox.assignments;
      const auto undelivered =
          std::remove_if(assignments.begin(), assignments.end(),
                         [&](const Assignment& a) { return a.job_id() == id; });
      if (undelivered != assignments.end()) {
        assignments.erase(undelivered, assignments.end());
        continue;
      }
      worker->mailbox.cancel_job_ids.push_back(id);
      worker->mailbox.cancel_reasons.push_back(reason);
    }
  }
  LogLocked(absl::StrCat("job ", id, " ", JobStateName(state),
                         message.empty() ? "" : ": ", message));
  JobStatus final_status = job.Status();
  for (const std::string& dropped : jobs_.Retire(id)) {
    LogLocked(absl::StrCat("job ", dropped, " dropped from the job table"));
  }
  ScheduleLocked();
  return final_status;
}

absl::StatusOr<JobStatus> CoordinatorService::GetJob(
    const GetJobRequest& request) const {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const Job* job, FindJobLocked(request.job_id()));
  return job->Status();
}

ListJobsResponse CoordinatorService::ListJobs() const {
  absl::MutexLock lock(&mu_);
  ListJobsResponse response;
  for (const Job* job : jobs_.All()) *response.add_jobs() = job->Status();
  return response;
}

absl::StatusOr<JobStatus> CoordinatorService::CancelJob(
    const CancelJobRequest& request) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Job * job, FindJobLocked(request.job_id()));
  if (IsFinal(job->state())) {
    return JobEndedError(*job, "there is nothing to cancel");
  }
  return EndJobLocked(*job, JOB_STATE_CANCELLED, "cancelled by the user");
}

ListWorkersResponse CoordinatorService::ListWorkers() const {
  absl::MutexLock lock(&mu_);
  ListWorkersResponse response;
  for (const WorkerRecord* worker : workers_.All()) {
    *response.add_workers() = WorkerRegistry::Info(*worker);
  }
  for (const PsRecord* server : servers_.All()) {
    ParameterServerInfo* info = response.add_parameter_servers();
    *info = PsRegistry::Info(*server);
    for (const Job* job : jobs_.All()) {
      if (IsFinal(job->state())) continue;
      const int shards = static_cast<int>(job->ShardsOn(server->id).size());
      if (shards == 0) continue;
      info->add_job_ids(job->id());
      info->set_shards(info->shards() + shards);
    }
  }
  return response;
}

}  // namespace gradsync
