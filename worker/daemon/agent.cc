#include "worker/daemon/agent.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "common/wire_version.h"
#include "jobspec/job_memory.h"
#include "models/link_probe/link_probe_spec.h"
#include "worker/daemon/devices.h"

namespace gradsync {
namespace {

constexpr absl::Duration kDeregisterTimeout = absl::Seconds(2);

}  // namespace
JobLauncher JobRunnerLauncher(JobRunnerConfig config,
                              std::shared_ptr<CoordinatorClient> client,
                              EntrypointConfig entrypoint) {
  return [config = std::move(config), client = std::move(client),
          entrypoint = std::move(entrypoint)](const WorkerIdentity& worker,
                                              const Assignment& assignment)
             -> absl::StatusOr<std::unique_ptr<JobHandle>> {
    JobRunnerConfig c = config;
    c.worker_id = worker.id;
    c.credential = worker.credential;
    if (assignment.spec().model().kind() == kEntrypointModelKind) {
      absl::StatusOr<std::unique_ptr<EntrypointRunner>> runner =
          EntrypointRunner::Start(assignment, std::move(c), entrypoint, client);
      if (!runner.ok()) return runner.status();
      return std::unique_ptr<JobHandle>(std::move(*runner));
    }
    if (IsLinkProbe(assignment.spec())) {
      absl::StatusOr<std::unique_ptr<LinkProbeRunner>> probe =
          LinkProbeRunner::Start(assignment, std::move(c), client);
      if (!probe.ok()) return probe.status();
      return std::unique_ptr<JobHandle>(std::move(*probe));
    }
    absl::StatusOr<std::unique_ptr<JobRunner>> runner =
        JobRunner::Start(assignment, std::move(c), client);
    if (!runner.ok()) return runner.status();
    return std::unique_ptr<JobHandle>(std::move(*runner));
  };
}

Agent::Agent(AgentConfig config, std::shared_ptr<CoordinatorClient> client,
             JobLauncher launcher)
    : config_(std::move(config)),
      client_(std::move(client)),
      launcher_(std::move(launcher)) {
  absl::MutexLock lock(&mu_);
  heartbeat_ = config_.default_heartbeat;
}

Agent::~Agent() {
  Stop(absl::CancelledError("the worker agent was destroyed"));
}

void Agent::Log(absl::string_view line) const {
  if (config_.log) config_.log(line);
}

void Agent::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  absl::MutexLock lock(&thread_mu_);
  loop_ = std::thread([this] { Loop(); });
}

void Agent::Stop(const absl::Status& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  calls_.CancelAll(reason);
  {
    absl::MutexLock lock(&thread_mu_);
    if (loop_.joinable()) loop_.join();
  }
  // The loop has ended: this thread now owns jobs_.
  CancelAllJobs(reason);
  std::map<std::string, std::unique_ptr<JobHandle>> jobs;
  {
    absl::MutexLock lock(&mu_);
    jobs.swap(jobs_);
  }
  for (auto& [id, job] : jobs) job->Join();
  if (!jobs.empty()) Log(absl::StrCat("stopped ", jobs.size(), " job(s)"));
  Deregister(reason);
}

// Tells the coordinator this worker is gone, so that it does not place jobs
// on it until the lease runs out. Best effort: the lease still covers a
// coordinator that cannot be reached.
void Agent::Deregister(const absl::Status& reason) {
  std::string id;
  DeregisterWorkerRequest request;
  {
    absl::MutexLock lock(&mu_);
    id = worker_id_;
    request.set_credential(credential_);
  }
  if (id.empty()) return;
  request.set_worker_id(id);
  request.set_reason(std::string(reason.message()));
  const absl::Status status =
      client_->DeregisterWorker(request, {absl::Now() + kDeregisterTimeout})
          .status();
  Log(status.ok()
          ? absl::StrCat("deregistered ", id, " from the coordinator")
          : absl::StrCat("could not deregister ", id,
                         " (its lease will expire): ", status.ToString()));
}

std::string Agent::worker_id() const {
  absl::MutexLock lock(&mu_);
  return worker_id_;
}

int64_t Agent::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

std::vector<std::string> Agent::jobs() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

bool Agent::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool Agent::Sleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  return !stopping_;
}

void Agent::Loop() {
  absl::Duration backoff = config_.min_backoff;
  bool failing = false;
  while (!stopping()) {
    Reap();
    const std::string id = worker_id();
    const absl::Time start = absl::Now();
    bool had_news = false;
    const absl::Status status = id.empty() ? Register() : Heartbeat(&had_news);
    if (stopping()) break;
    if (config_.on_contact) {
      // NOT_FOUND and PERMISSION_DENIED too: the worker is not registered.
      config_.on_contact(status.ok());
    }
    if (status.ok()) {
      if (failing) {
        Log(absl::StrCat("coordinator at ", config_.coordinator,
                         " is reachable again"));
        failing = false;
      }
      backoff = config_.min_backoff;
      if (!id.empty() && !had_news) {
        // At most one heartbeat per interval, even if the coordinator
        // answers a long-poll early.
        absl::Duration interval;
        {
          absl::MutexLock lock(&mu_);
          interval = heartbeat_;
        }
        Sleep(interval - (absl::Now() - start));
      }
      continue;
    }
    // PERMISSION_DENIED: the id now belongs to another daemon (a
    // coordinator restarted without its --state-db gave it away); going on
    // under it would never work.
    if ((status.code() == absl::StatusCode::kNotFound ||
         status.code() == absl::StatusCode::kPermissionDenied) &&
        !id.empty()) {
      Log(absl::StrCat(
          "coordinator at ", config_.coordinator,
          status.code() == absl::StatusCode::kNotFound
              ? " does not know worker "
              : " refuses this daemon's credential for worker ",
          id,
          " (declared lost after missed heartbeats, or the coordinator "
          "restarted without its state): cancelling its jobs and registering "
          "again"));
      CancelAllJobs(absl::AbortedError(absl::StrCat(
          "worker ", id, " was declared lost by the coordinator")));
      absl::MutexLock lock(&mu_);
      worker_id_.clear();
      credential_.clear();
      continue;
    }
    Log(absl::StrCat(id.empty() ? "registration with" : "heartbeat to",
                     " coordinator at ", config_.coordinator,
                     " failed: ", status.ToString(),
                     config_.hint ? config_.hint(status) : "", "; retrying in ",
                     absl::FormatDuration(backoff)));
    failing = true;
    Sleep(backoff);
    backoff = std::min(backoff * 2, config_.max_backoff);
  }
}

absl::Status Agent::Register() {
  RegisterWorkerRequest request;
  request.set_host(config_.host);
  request.set_address(config_.address);
  for (const Device& d : config_.devices) *request.add_devices() = d;
  request.set_pid(config_.pid);
  request.set_wire_version(kWireVersion);
  request.set_join_token(config_.join_token);
  request.set_job_memory_bytes(config_.max_job_memory_bytes);
  ASSIGN_OR_RETURN(const RegisterWorkerResponse response,
                   client_->RegisterWorker(
                       request, {absl::Now() + config_.rpc_timeout, &calls_}));
  if (response.worker_id().empty()) {
    return absl::InternalError("the coordinator answered without a worker id");
  }
  const absl::Duration heartbeat =
      response.heartbeat_ms() > 0 ? absl::Milliseconds(response.heartbeat_ms())
                                  : config_.default_heartbeat;
  {
    absl::MutexLock lock(&mu_);
    worker_id_ = response.worker_id();
    credential_ = response.credential();
    heartbeat_ = heartbeat;
    ++registrations_;
  }
  Log(absl::StrCat("registered with coordinator at ", config_.coordinator,
                   " as ", response.worker_id(), " (host ", config_.host,
                   ", address ", config_.address, ", devices ",
                   FormatDevices(config_.devices), ", lease ",
                   response.lease_ms(), " ms, heartbeat ",
                   absl::FormatDuration(heartbeat), ")"));
  return absl::OkStatus();
}

absl::Status Agent::Heartbeat(bool* had_news) {
  WorkerIdentity worker;
  absl::Duration wait;
  HeartbeatRequest request;
  {
    absl::MutexLock lock(&mu_);
    worker = {worker_id_, credential_};
    wait = heartbeat_;
    // Jobs still stopping count: the coordinator keeps their devices busy
    // until they are gone from this list.
    for (const auto& [id, handle] : jobs_) request.add_held_job_ids(id);
  }
  request.set_worker_id(worker.id);
  request.set_credential(worker.credential);
  request.set_wait_ms(absl::ToInt64Milliseconds(wait));
  ASSIGN_OR_RETURN(
      const HeartbeatResponse response,
      client_->Heartbeat(request,
                         {absl::Now() + wait + config_.rpc_timeout, &calls_}));
  *had_news = response.assignments_size() > 0 ||
              response.cancel_job_ids_size() > 0 ||
              response.switches_size() > 0;
  // Cancellations first: a job may be cancelled and re-assigned (a new
  // generation) in one response.
  for (const std::string& job_id : response.cancel_job_ids()) {
    CancelJob(job_id, absl::CancelledError(response.cancel_reason().empty()
                                               ? "cancelled by the coordinator"
                                               : response.cancel_reason()));
  }
  for (const Assignment& assignment : response.assignments()) {
    Launch(worker, assignment);
  }
  // After the assignments: a request for a job just assigned reaches it.
  for (const SwitchNotice& notice : response.switches()) {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(notice.job_id());
    if (it != jobs_.end()) it->second->NotifySwitch(notice.epoch());
  }
  return absl::OkStatus();
}

void Agent::Launch(const WorkerIdentity& worker, const Assignment& assignment) {
  const std::string& job_id = assignment.job_id();
  std::unique_ptr<JobHandle> previous;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it != jobs_.end()) {
      previous = std::move(it->second);
      jobs_.erase(it);
    }
  }
  if (previous != nullptr) {
    // A new generation of a job still running here (the coordinator
    // restarted its rendezvous): the old ranks must be gone before the new
    // ones bind. Cancelled ranks end within moments, so waiting here only
    // briefly delays the next heartbeat.
    previous->Cancel(absl::AbortedError(
        absl::StrCat("job ", job_id, " was assigned again (generation ",
                     assignment.generation(), ")")));
    previous->Join();
  }
  Log(absl::StrCat("assigned job ", job_id, " generation ",
                   assignment.generation(), ": ranks [",
                   absl::StrJoin(assignment.ranks(), ", "), "] of ",
                   assignment.world_size()));
  Reap();  // jobs that ended since the last heartbeat leave room
  std::vector<std::string> held;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, handle] : jobs_) held.push_back(id);
  }
  if (held.size() >= MaxJobs()) {
    FailStart(worker, assignment,
              absl::ResourceExhaustedError(absl::StrCat(
                  "worker ", worker.id, " already holds ", held.size(),
                  " jobs, running or still stopping after a cancel (",
                  absl::StrJoin(held, ", "), "), its limit (one per device, ",
                  config_.devices.size(),
                  ", unless --max-jobs says); submit again once they have "
                  "ended")));
    return;
  }
  if (absl::Status room = CheckJobMemory(assignment); !room.ok()) {
    FailStart(worker, assignment, room);
    return;
  }
  absl::StatusOr<std::unique_ptr<JobHandle>> job =
      launcher_(worker, assignment);
  if (job.ok()) {
    absl::MutexLock lock(&mu_);
    jobs_[job_id] = *std::move(job);
    job_memory_[job_id] = JobMemory(assignment);
    return;
  }
  FailStart(worker, assignment, job.status());
}

int64_t Agent::JobMemory(const Assignment& assignment) {
  return EstimateRankMemory(assignment.spec()).total() *
         assignment.ranks_size();
}

absl::Status Agent::CheckJobMemory(const Assignment& assignment) const {
  if (config_.max_job_memory_bytes <= 0) return absl::OkStatus();
  const int64_t need = JobMemory(assignment);
  int64_t in_use = 0;
  std::vector<std::string> holders;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, handle] : jobs_) {
      auto it = job_memory_.find(id);
      if (it == job_memory_.end() || it->second == 0) continue;
      in_use += it->second;
      holders.push_back(id);
    }
  }
  if (in_use + need <= config_.max_job_memory_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "its ", assignment.ranks_size(), " ranks here need about ",
      FormatBytes(static_cast<double>(need)), " (",
      EstimateRankMemory(assignment.spec()).Describe(),
      "), more than is left of this worker's --max-job-memory of ",
      FormatBytes(static_cast<double>(config_.max_job_memory_bytes)),
      holders.empty()
          ? std::string()
          : absl::StrCat(" (", FormatBytes(static_cast<double>(in_use)),
                         " held by jobs ", absl::StrJoin(holders, ", "), ")"),
      "; shrink the model or the batch, or run it on workers with more "
      "memory"));
}

size_t Agent::MaxJobs() const {
  if (config_.max_jobs > 0) return static_cast<size_t>(config_.max_jobs);
  return std::max<size_t>(1, config_.devices.size());
}

void Agent::FailStart(const WorkerIdentity& worker,
                      const Assignment& assignment, const absl::Status& why) {
  const std::string& job_id = assignment.job_id();
  Log(absl::StrCat("job ", job_id, " could not start: ", why.ToString()));
  for (int rank : assignment.ranks()) {
    ReportRankRequest request;
    request.set_worker_id(worker.id);
    request.set_credential(worker.credential);
    request.set_job_id(job_id);
    request.set_rank(rank);
    request.set_state(RANK_STATE_FAILED);
    request.set_operation("job start");
    request.set_message(why.ToString());
    // Best effort: the coordinator fails a job whose ranks never report.
    client_->ReportRank(request, {absl::Now() + config_.rpc_timeout})
        .IgnoreError();
  }
}

void Agent::CancelJob(const std::string& job_id, const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;  // never started here, or already reaped
  Log(absl::StrCat("cancelling job ", job_id, ": ", reason.message()));
  it->second->Cancel(reason);
}

void Agent::CancelAllJobs(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, job] : jobs_) job->Cancel(reason);
}

void Agent::Reap() {
  std::vector<std::unique_ptr<JobHandle>> done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->second->Done()) {
        done.push_back(std::move(it->second));
        job_memory_.erase(it->first);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& job : done) job->Join();
}

}  // namespace gradsync
