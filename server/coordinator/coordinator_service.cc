// CoordinatorService: the facade (see coordinator_service.h). Job
// submission, queries, cancellation and switch requests live here; the
// rest is delegated to the parts.
#include "server/coordinator/coordinator_service.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/advertised_address.h"
#include "common/status_macros.h"
#include "jobspec/job_memory.h"
#include "jobspec/job_spec.h"
#include "security/path_roots.h"
#include "security/secret.h"
#include "server/coordinator/coordinator_metrics.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<CoordinatorService>> CoordinatorService::Create(
    CoordinatorConfig config) {
  RETURN_IF_ERROR(ValidateCoordinatorConfig(config));
  if (!config.clock) config.clock = [] { return absl::Now(); };
  SavedState saved;
  if (config.state_store != nullptr) {
    ASSIGN_OR_RETURN(saved, config.state_store->Load());
  }
  std::unique_ptr<CoordinatorService> service(
      new CoordinatorService(std::move(config), saved.meta));
  {
    absl::MutexLock lock(&service->state_.mu);
    if (service->state_.saver.enabled()) service->RestoreLocked(saved);
  }
  return service;
}

CoordinatorService::CoordinatorService(CoordinatorConfig config,
                                       const SavedMeta& saved)
    : state_(std::move(config), saved) {}

void CoordinatorService::RestoreLocked(const SavedState& saved) {
  // Daemons find a restarted coordinator only at their next retry, after a
  // backoff of up to 5 s and their channel's own reconnection: their
  // leases start that much later. Their last heartbeat reads as the
  // restart (never in the future: ages stay >= 0).
  const absl::Time now = state_.Now();
  const absl::Time lease_from = now + kRestartGrace;
  int live_workers = 0, live_servers = 0;
  for (const SavedWorker& w : saved.workers) {
    live_workers += w.lost() ? 0 : 1;
    WorkerRecord worker = RestoreWorker(w, now);
    worker.lease_from = lease_from;
    state_.workers.Restore(std::move(worker));
  }
  state_.workers.RaiseNextNumber(saved.meta.next_worker());
  for (const SavedServer& s : saved.servers) {
    live_servers += s.lost() ? 0 : 1;
    PsRecord server = RestoreServer(s, now);
    server.lease_from = lease_from;
    state_.servers.Restore(std::move(server));
  }
  state_.servers.RaiseNextNumber(saved.meta.next_ps());
  static const std::vector<StepMetrics> kNoMetrics;
  std::vector<std::string> at_rendezvous;
  int running = 0;
  for (const SavedJob& j : saved.jobs) {
    auto metrics = saved.metrics.find(j.id());
    state_.jobs.Restore(
        Job::Restore(
            j, metrics == saved.metrics.end() ? kNoMetrics : metrics->second),
        j.number(), j.pending(), j.ended());
    if (j.state() == JOB_STATE_RENDEZVOUS) at_rendezvous.push_back(j.id());
    if (j.state() == JOB_STATE_RUNNING) ++running;
  }
  state_.jobs.RaiseNextNumber(saved.meta.next_job());
  for (const auto& [key, value] : saved.keys) {
    (void)state_.store.Set(key, value);
  }
  state_.saver.Remember(saved);
  if (state_.incarnation > 1) {
    state_.LogLocked(absl::StrCat(
        "restarted on the ", state_.saver.store()->Describe(), " (start ",
        state_.incarnation, "): ", saved.jobs.size(), " jobs (", running,
        " running, ", state_.jobs.pending().size(), " pending), ", live_workers,
        " live workers, ", live_servers, " live parameter servers; each has ",
        absl::FormatDuration(state_.config.lease + kRestartGrace),
        " to re-attach"));
  } else {
    state_.LogLocked(absl::StrCat("saving its state to the ",
                                  state_.saver.store()->Describe()));
  }
  for (const std::string& id : at_rendezvous) {
    Job* job = state_.jobs.Find(id);
    if (job == nullptr) continue;
    lifecycle_.EndLocked(
        *job, JOB_STATE_FAILED,
        "the coordinator restarted while the job was at rendezvous (its "
        "barriers are not saved); submit it again, or give it "
        "--max-restarts");
  }
  lifecycle_.ScheduleLocked();
  state_.SaveLocked();
}

CoordinatorService::~CoordinatorService() { Shutdown(); }

void CoordinatorService::StartLeaseChecks() {
  absl::MutexLock thread_lock(&thread_mu_);
  if (lease_thread_.joinable()) return;
  {
    absl::MutexLock lock(&state_.mu);
    if (state_.shutting_down) return;
  }
  lease_thread_ = std::thread([this] { LeaseCheckLoop(); });
}

void CoordinatorService::LeaseCheckLoop() {
  absl::Time last_check = absl::Now();
  for (;;) {
    {
      absl::MutexLock lock(&state_.mu);
      if (state_.mu.AwaitWithTimeout(absl::Condition(&state_.shutting_down),
                                     state_.config.lease_check_interval)) {
        return;
      }
    }
    const absl::Time now = absl::Now();
    const absl::Duration stalled = now - last_check;
    last_check = now;
    if (stalled > state_.config.lease / 2) {
      // The coordinator itself did not run (SIGSTOP, a starved host): the
      // heartbeats it could not hear say nothing about the daemons.
      absl::MutexLock lock(&state_.mu);
      const int renewed = leases_.RenewAllLocked(state_.Now());
      state_.LogLocked(absl::StrCat(
          "the lease checker did not run for ", absl::FormatDuration(stalled),
          " (the coordinator was stopped or starved of CPU): ", renewed,
          " live daemons get a fresh lease instead of being declared lost"));
      continue;
    }
    CheckLeases(state_.Now());
  }
}

void CoordinatorService::Shutdown() {
  {
    absl::MutexLock lock(&state_.mu);
    state_.shutting_down = true;
  }
  absl::MutexLock thread_lock(&thread_mu_);
  if (lease_thread_.joinable()) lease_thread_.join();
}

// ---- worker daemons ----

absl::Status CoordinatorService::Admit(absl::string_view what,
                                       absl::string_view join_token,
                                       const DaemonCaller& caller) {
  absl::Status admitted = AdmitDaemon(state_.config, what, join_token, caller);
  if (!admitted.ok()) {
    absl::MutexLock lock(&state_.mu);
    state_.LogLocked(
        absl::StrCat("refused to register a ", admitted.message()));
  }
  return admitted;
}

absl::StatusOr<RegisterWorkerResponse> CoordinatorService::RegisterWorker(
    const RegisterWorkerRequest& request, const DaemonCaller& caller) {
  const std::string what = absl::StrCat("worker on host ", request.host());
  RETURN_IF_ERROR(Admit(what, request.join_token(), caller));
  RETURN_IF_ERROR(CheckAdvertisedAddress(what, request.address(), caller.peer,
                                         "--address"));
  return Saved(leases_.RegisterWorker(request));
}

absl::Status CoordinatorService::DeregisterWorker(
    const DeregisterWorkerRequest& request) {
  return Saved(leases_.DeregisterWorker(request));
}

absl::StatusOr<HeartbeatResponse> CoordinatorService::Heartbeat(
    const HeartbeatRequest& request, absl::Time deadline,
    CancelledFn cancelled) {
  return Saved(leases_.Heartbeat(request, deadline, cancelled));
}

absl::Status CoordinatorService::ReportRank(const ReportRankRequest& request) {
  return Saved(progress_.ReportRank(request));
}

absl::Status CoordinatorService::ReportMetrics(
    const ReportMetricsRequest& request) {
  return Saved(progress_.ReportMetrics(request));
}

// ---- rendezvous ----

absl::Status CoordinatorService::StoreSet(const StoreSetRequest& request) {
  return Saved(rendezvous_.StoreSet(request));
}

absl::StatusOr<StoreGetResponse> CoordinatorService::StoreGet(
    const StoreGetRequest& request, absl::Time deadline,
    CancelledFn cancelled) {
  return rendezvous_.StoreGet(request, deadline, cancelled);
}

absl::StatusOr<StoreAddResponse> CoordinatorService::StoreAdd(
    const StoreAddRequest& request) {
  return Saved(rendezvous_.StoreAdd(request));
}

absl::Status CoordinatorService::StoreWait(const StoreWaitRequest& request,
                                           absl::Time deadline,
                                           CancelledFn cancelled) {
  return rendezvous_.StoreWait(request, deadline, cancelled);
}

absl::Status CoordinatorService::Barrier(const BarrierRequest& request,
                                         absl::Time deadline,
                                         CancelledFn cancelled) {
  return rendezvous_.Barrier(request, deadline, cancelled);
}

// ---- users ----

absl::Status CoordinatorService::CheckUser(absl::string_view presented) const {
  const std::string& token = state_.config.user_token;
  if (token.empty() || SecretsEqual(presented, token)) return absl::OkStatus();
  return absl::UnauthenticatedError(absl::StrCat(
      presented.empty() ? "this coordinator admits users with its token only"
                        : "the token presented is not this coordinator's",
      ": pass --token-file FILE or set GRADSYNC_TOKEN_FILE to the file the "
      "coordinator's --user-token-file names (`gradsync local up` writes "
      "RUN_DIR/user-token)"));
}

absl::Status CoordinatorService::CheckJobMemoryLocked(const JobSpec& spec) {
  const RankMemoryEstimate rank = EstimateRankMemory(spec);
  const DeviceInventory devices = state_.workers.Inventory();
  const int room = devices.Capacity(spec.device(), rank.total());
  if (room >= spec.num_workers()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the job needs about ", rank.Describe(),
      ", and the live workers' "
      "--max-job-memory holds only ",
      room, " of its ", spec.num_workers(), " ranks (",
      devices.DescribeMemory(),
      "); shrink the model or the batch, lower numWorkers, or start workers "
      "with more memory (nothing was submitted)"));
}

absl::StatusOr<SubmitJobResponse> CoordinatorService::SubmitJob(
    const SubmitJobRequest& request) {
  ASSIGN_OR_RETURN(JobSpec spec, ValidateJobSpec(request.spec()));
  // An entrypoint is code run on every worker: only a coordinator that
  // authenticates its users (CheckUser) takes one.
  if (spec.model().kind() == kEntrypointModelKind &&
      state_.config.user_token.empty()) {
    return absl::PermissionDeniedError(
        "entrypoint jobs run the submitter's program on every worker, so "
        "this coordinator takes them only from authenticated users: start "
        "it with --user-token-file (`gradsync local up` does)");
  }
  RETURN_IF_ERROR(CheckUnderRoots("checkpoint.directory",
                                  spec.checkpoint().directory(),
                                  state_.config.checkpoint_roots));
  RETURN_IF_ERROR(CheckUnderRoots("checkpoint.resumeFrom",
                                  spec.checkpoint().resume_from(),
                                  state_.config.checkpoint_roots));
  absl::MutexLock lock(&state_.mu);
  const int total = state_.workers.TotalDevices(spec.device());
  if (spec.num_workers() > total) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the job asks for ", spec.num_workers(), " ranks (numWorkers) on ",
        spec.device(), " devices but the live workers have only ", total, " (",
        state_.workers.DescribeDevices(spec.device()),
        "); start more workers (one rank per device) or lower numWorkers"));
  }
  RETURN_IF_ERROR(CheckJobMemoryLocked(spec));
  if (JobNeedsPs(spec) && state_.servers.Live().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the job synchronises through parameter-server shards (",
        spec.mode() == SYNC_MODE_PS ? "mode PS" : "a scripted switch to PS",
        ") but ", kNoParameterServerMessage));
  }
  Job* job = state_.jobs.Create(std::move(spec), state_.Now());
  state_.LogLocked(absl::StrCat(
      "job ", job->id(), " submitted: ", job->spec().num_workers(),
      " ranks on ", job->spec().device(), ", name '", job->spec().name(), "'"));
  SubmitJobResponse response;
  response.set_job_id(job->id());
  lifecycle_.ScheduleLocked();
  state_.SaveLocked();
  return response;
}

absl::StatusOr<JobStatus> CoordinatorService::GetJob(
    const GetJobRequest& request) const {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(const Job* job, state_.FindJobLocked(request.job_id()));
  return job->Status();
}

ListJobsResponse CoordinatorService::ListJobs() const {
  absl::MutexLock lock(&state_.mu);
  ListJobsResponse response;
  for (const Job* job : state_.jobs.All()) *response.add_jobs() = job->Status();
  return response;
}

absl::StatusOr<JobStatus> CoordinatorService::CancelJob(
    const CancelJobRequest& request) {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(Job * job, state_.FindJobLocked(request.job_id()));
  if (IsFinal(job->state())) {
    return JobEndedError(*job, "there is nothing to cancel");
  }
  JobStatus status =
      lifecycle_.EndLocked(*job, JOB_STATE_CANCELLED, "cancelled by the user");
  state_.SaveLocked();
  return status;
}

absl::StatusOr<std::optional<JobEvent>> CoordinatorService::WaitForJobEvent(
    absl::string_view job_id, JobWatchCursor* cursor, absl::Time deadline,
    CancelledFn cancelled) {
  return progress_.WaitForJobEvent(job_id, cursor, deadline, cancelled);
}

absl::StatusOr<GetMetricsResponse> CoordinatorService::GetMetrics(
    const GetMetricsRequest& request) const {
  return progress_.GetMetrics(request);
}

absl::StatusOr<GetJobLogsResponse> CoordinatorService::GetJobLogs(
    const GetJobLogsRequest& request) const {
  return progress_.GetJobLogs(request);
}

void CoordinatorService::CollectMetrics(std::vector<MetricFamily>* out) const {
  absl::MutexLock lock(&state_.mu);
  CollectCoordinatorMetricsLocked(state_, state_.Now(), out);
}

ListWorkersResponse CoordinatorService::ListWorkers() const {
  absl::MutexLock lock(&state_.mu);
  ListWorkersResponse response;
  for (const WorkerRecord* worker : state_.workers.All()) {
    *response.add_workers() = WorkerRegistry::Info(*worker);
  }
  for (const PsRecord* server : state_.servers.All()) {
    ParameterServerInfo* info = response.add_parameter_servers();
    *info = PsRegistry::Info(*server);
    for (const Job* job : state_.jobs.All()) {
      if (IsFinal(job->state())) continue;
      const int shards = static_cast<int>(job->ShardsOn(server->id).size());
      if (shards == 0) continue;
      info->add_job_ids(job->id());
      info->set_shards(info->shards() + shards);
    }
  }
  *response.mutable_link_facts() = LinkFactsLocked();
  response.set_coordinator_address(state_.advertised_address);
  return response;
}

void CoordinatorService::SetAdvertisedAddress(std::string address) {
  absl::MutexLock lock(&state_.mu);
  state_.advertised_address = std::move(address);
}

absl::StatusOr<SwitchJobResponse> CoordinatorService::SwitchJob(
    const SwitchJobRequest& request) {
  const SyncMode mode = request.mode();
  if (mode != SYNC_MODE_RING && mode != SYNC_MODE_PS) {
    return absl::InvalidArgumentError(
        absl::StrCat("switch mode is ", static_cast<int>(mode),
                     "; use SYNC_MODE_RING or SYNC_MODE_PS (ring or ps)"));
  }
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(Job * job, state_.FindJobLocked(request.job_id()));
  // A 16-bit job may switch to PS too: its ranks create the shards with
  // the job's gradient type (CreateShardRequest.wire_dtype).
  ASSIGN_OR_RETURN(const int64_t epoch,
                   lifecycle_.RequestSwitchLocked(*job, mode, ""));
  SwitchJobResponse response;
  response.set_epoch(epoch);
  *response.mutable_status() = job->Status();
  state_.SaveLocked();
  return response;
}

absl::StatusOr<ClusterLinkFacts> CoordinatorService::SetLinkFacts(
    const SetLinkFactsRequest& request) {
  const double gbps = request.facts().link_gbps();
  const double alpha_us = request.facts().link_alpha_us();
  if (!std::isfinite(gbps) || gbps < 0 || !std::isfinite(alpha_us) ||
      alpha_us < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "link facts of %g GB/s and alpha %g us: give a bandwidth >= 0 (0: "
        "unknown) and a latency >= 0; nothing changed",
        gbps, alpha_us));
  }
  const std::string& source = request.facts().source();
  if (source.size() > kMaxLinkFactsSourceBytes ||
      source.find_first_of(std::string("\0\n", 2)) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link facts' source is ", source.size(),
        " bytes or holds a NUL or a newline; say where the figures come "
        "from in one line of at most ",
        kMaxLinkFactsSourceBytes, " bytes; nothing changed"));
  }
  absl::MutexLock lock(&state_.mu);
  const LinkModel before = state_.links;
  state_.links = {alpha_us * 1e-6, gbps * 1e9};
  state_.links_source = source;
  state_.LogLocked(absl::StrFormat(
      "link facts: %g GB/s, alpha %g us%s (were %g GB/s, alpha %g us)", gbps,
      alpha_us, source.empty() ? "" : absl::StrCat(", from ", source),
      before.bandwidth_Bps / 1e9, before.alpha_s * 1e6));
  state_.SaveLocked();
  return LinkFactsLocked();
}

ClusterLinkFacts CoordinatorService::LinkFactsLocked() const {
  ClusterLinkFacts facts;
  facts.set_link_gbps(state_.links.bandwidth_Bps / 1e9);
  facts.set_link_alpha_us(state_.links.alpha_s * 1e6);
  facts.set_source(state_.links_source);
  return facts;
}

// ---- parameter servers ----

absl::StatusOr<RegisterParameterServerResponse>
CoordinatorService::RegisterParameterServer(
    const RegisterParameterServerRequest& request, const DaemonCaller& caller) {
  const std::string what =
      absl::StrCat("parameter server on host ", request.host());
  RETURN_IF_ERROR(Admit(what, request.join_token(), caller));
  RETURN_IF_ERROR(
      CheckAdvertisedAddress(what, request.address(), caller.peer, "--listen"));
  return Saved(leases_.RegisterParameterServer(request));
}

absl::StatusOr<PsHeartbeatResponse> CoordinatorService::PsHeartbeat(
    const PsHeartbeatRequest& request) {
  return Saved(leases_.PsHeartbeat(request));
}

absl::Status CoordinatorService::DeregisterParameterServer(
    const DeregisterParameterServerRequest& request) {
  return Saved(leases_.DeregisterParameterServer(request));
}

// ---- leases ----

std::vector<std::string> CoordinatorService::CheckLeases(absl::Time now) {
  return Saved(leases_.CheckLeases(now));
}

}  // namespace gradsync
