// CoordinatorService: the coordinator's logic, as a facade over its parts —
// worker and parameter-server registries (worker_registry.h,
// ps_registry.h) with their registrations, heartbeats and leases
// (daemon_leases.h), the job table and its state machine (job.h), scheduling
// as a pure plan (job_scheduler.h, device_inventory.h), PS shard placement
// (ps_placement.h), the job lifecycle with its runtime switches (placing,
// ending, restarting, resuming: job_lifecycle.h), the rendezvous store and
// barriers (job_rendezvous.h) and rank reports and metrics
// (job_progress.h), all over one shared state (coordinator_state.h). No
// gRPC in here: the RPC adapter (coordinator_rpc.h) turns each RPC of
// proto/coordinator.proto into one call below, and tests make the same
// calls directly.
//
//   ASSIGN_OR_RETURN(auto service, CoordinatorService::Create(config));
//   ASSIGN_OR_RETURN(RegisterWorkerResponse worker,
//                    service->RegisterWorker(request));
//   ASSIGN_OR_RETURN(SubmitJobResponse job, service->SubmitJob(submit));
//   ASSIGN_OR_RETURN(HeartbeatResponse news, service->Heartbeat(beat));
//   // news.assignments() holds the job's ranks placed on this worker.
//
// Blocking calls (Heartbeat, StoreGet, StoreWait, Barrier,
// WaitForJobEvent) wait until their condition holds or their deadline
// passes. Every config.wait_slice they also check `cancelled` (CANCELLED)
// and shutdown (UNAVAILABLE).
//
// Threading: thread-safe; every method may be called from any thread.
// Locking: one mutex guards the registries and the job table
// (coordinator_state.h); the store has its own, taken after it.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_SERVICE_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_SERVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/memory_store.h"
#include "observability/prometheus.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_config.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/daemon_admission.h"
#include "server/coordinator/daemon_leases.h"
#include "server/coordinator/job.h"
#include "server/coordinator/job_lifecycle.h"
#include "server/coordinator/job_progress.h"
#include "server/coordinator/job_rendezvous.h"
#include "server/coordinator/ps_placement.h"

namespace gradsync {

// ClusterLinkFacts.source: at most this long.
inline constexpr size_t kMaxLinkFactsSourceBytes = 512;

class CoordinatorService {
 public:
  // What a restarted coordinator adds to the lease of each daemon it
  // loads (RestoreLocked), for the daemon to find it again.
  static constexpr absl::Duration kRestartGrace = absl::Seconds(10);

  // Most step metrics in one JobEvent (job_progress.h).
  static constexpr int kMaxStepsPerEvent = JobProgress::kMaxStepsPerEvent;

  // INVALID_ARGUMENT for a bad config (ValidateCoordinatorConfig). With a
  // config.state_store, loads what it holds first (RestoreLocked); its
  // errors (UNAVAILABLE, DATA_LOSS) are returned.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CoordinatorService>>
  Create(CoordinatorConfig config);

  CoordinatorService(const CoordinatorService&) = delete;
  CoordinatorService& operator=(const CoordinatorService&) = delete;
  // Shutdown(), then frees the state.
  ~CoordinatorService();

  // ---- worker daemons ----

  // Adds a worker with a fresh id "w-<n>" and starts its lease; its devices
  // are offered to pending jobs at once.
  // INVALID_ARGUMENT: empty host or address, no devices, a device kind that
  // is not "cpu"/"cuda", a negative or repeated device (nothing added).
  // FAILED_PRECONDITION: the worker's wire_version is not this build's
  // (common/wire_version.h; nothing added); or it advertises a loopback
  // address while `peer` (the caller's gRPC peer, "ipv4:IP:PORT"; empty:
  // unknown) is another host (common/advertised_address.h; nothing added, and
  // the error names --address).
  // Only a caller that proves to be a daemon of this cluster registers
  // (daemon_admission.h: the node certificate under mTLS, the join token
  // when the coordinator has one); PERMISSION_DENIED otherwise, logged,
  // nothing added.
  [[nodiscard]] absl::StatusOr<RegisterWorkerResponse> RegisterWorker(
      const RegisterWorkerRequest& request, const DaemonCaller& caller = {});

  // Withdraws a worker that is shutting down: like a lost lease, but at
  // once; its running jobs fail naming it and the reason.
  // NOT_FOUND: the worker is unknown or already lost.
  [[nodiscard]] absl::Status DeregisterWorker(
      const DeregisterWorkerRequest& request);

  // Renews the worker's lease and returns its news: new assignments, jobs to
  // cancel and runtime switch notices. Returns at once when there is news,
  // otherwise when some arrives, after min(wait_ms, lease / 2), or at
  // `deadline`, whichever is first (then with no news); the lease is renewed
  // again on return. NOT_FOUND: unknown worker, or one declared lost (register
  // again). CANCELLED: `cancelled` returned true (the news stays for the next
  // heartbeat). UNAVAILABLE: shutting down.
  [[nodiscard]] absl::StatusOr<HeartbeatResponse> Heartbeat(
      const HeartbeatRequest& request,
      absl::Time deadline = absl::InfiniteFuture(),
      CancelledFn cancelled = NeverCancelled);

  // A rank's lifecycle. READY from every rank: RENDEZVOUS → RUNNING.
  // SUCCEEDED from every rank: → SUCCEEDED, devices freed (rank 0's
  // test_accuracy/test_loss become the job's). FAILED from any rank: →
  // FAILED with "rank R failed at step S during <operation>: <message>",
  // the job's other workers are told to cancel, devices freed.
  // INVALID_ARGUMENT: state UNSPECIFIED or negative step. NOT_FOUND: unknown
  // job. PERMISSION_DENIED: the rank is not in the job or not on this
  // worker. FAILED_PRECONDITION: the job already ended. Errors change
  // nothing.
  [[nodiscard]] absl::Status ReportRank(const ReportRankRequest& request);

  // Appends step metrics (all or none).
  // INVALID_ARGUMENT: a negative step. NOT_FOUND: unknown job.
  // PERMISSION_DENIED: a rank not in the job or not on this worker.
  // FAILED_PRECONDITION: the job is not RENDEZVOUS or RUNNING.
  [[nodiscard]] absl::Status ReportMetrics(const ReportMetricsRequest& request);

  // ---- rendezvous: keys live under "job/<id>/gen/<g>/" ----
  // Common errors of the store calls and Barrier (checked in this order):
  // INVALID_ARGUMENT: empty key or barrier name. NOT_FOUND: unknown job.
  // PERMISSION_DENIED: the scope's worker hosts no rank of the job.
  // FAILED_PRECONDITION: the job is not RENDEZVOUS or RUNNING (also when it
  // ends while the call waits; the message says why it ended), or the
  // scope's generation is not the job's.

  [[nodiscard]] absl::Status StoreSet(const StoreSetRequest& request);

  // Waits for the key until timeout_ms from now or `deadline`.
  // DEADLINE_EXCEEDED naming the key; CANCELLED; UNAVAILABLE.
  [[nodiscard]] absl::StatusOr<StoreGetResponse> StoreGet(
      const StoreGetRequest& request,
      absl::Time deadline = absl::InfiniteFuture(),
      CancelledFn cancelled = NeverCancelled);

  // FAILED_PRECONDITION also when the key holds a non-integer.
  [[nodiscard]] absl::StatusOr<StoreAddResponse> StoreAdd(
      const StoreAddRequest& request);

  // DEADLINE_EXCEEDED naming the keys still missing; CANCELLED; UNAVAILABLE.
  [[nodiscard]] absl::Status StoreWait(
      const StoreWaitRequest& request,
      absl::Time deadline = absl::InfiniteFuture(),
      CancelledFn cancelled = NeverCancelled);

  // Returns once every rank of the job has arrived at the barrier `name`
  // (names can be reused: each completion starts a new round).
  // PERMISSION_DENIED also when the rank is not on the scope's worker.
  // DEADLINE_EXCEEDED naming the missing ranks and their workers (this
  // rank's arrival is withdrawn); CANCELLED; UNAVAILABLE.
  [[nodiscard]] absl::Status Barrier(
      const BarrierRequest& request,
      absl::Time deadline = absl::InfiniteFuture(),
      CancelledFn cancelled = NeverCancelled);

  // ---- users (the CLI) ----

  // OK when the coordinator has no user token, or `presented` is it;
  // otherwise UNAUTHENTICATED telling the user where the token comes from.
  // The RPC adapter calls it before every user RPC.
  [[nodiscard]] absl::Status CheckUser(absl::string_view presented) const;

  // Validates the spec (ValidateJobSpec), adds the job as PENDING and
  // schedules it (FIFO) if enough devices are free (and, for a job that
  // needs PS shards, a parameter server is live).
  // INVALID_ARGUMENT: bad spec. RESOURCE_EXHAUSTED: more ranks than devices
  // of the spec's kind on live workers, or than their --max-job-memory
  // holds by the spec's estimate (jobspec/job_memory.h). FAILED_PRECONDITION:
  // the job needs PS shards and no parameter server is live. Errors add no job.
  [[nodiscard]] absl::StatusOr<SubmitJobResponse> SubmitJob(
      const SubmitJobRequest& request);

  // NOT_FOUND: unknown job.
  [[nodiscard]] absl::StatusOr<JobStatus> GetJob(
      const GetJobRequest& request) const;

  // Every job still kept, oldest first.
  ListJobsResponse ListJobs() const;

  // → CANCELLED; the job's workers are told to stop its ranks and its
  // devices are freed. NOT_FOUND: unknown job. FAILED_PRECONDITION: the job
  // already ended (nothing changed).
  [[nodiscard]] absl::StatusOr<JobStatus> CancelJob(
      const CancelJobRequest& request);

  // For WatchJob: the job's status and the step metrics not sent yet, once
  // the job has changed since `cursor` (at once for a fresh cursor), or
  // nullopt when nothing changed by `deadline`. Advances `cursor`; sets
  // cursor->done on the event that reports the end of the job with the
  // last metrics, and returns nullopt at once after that.
  // NOT_FOUND: unknown job (or dropped while watched). CANCELLED;
  // UNAVAILABLE.
  [[nodiscard]] absl::StatusOr<std::optional<JobEvent>> WaitForJobEvent(
      absl::string_view job_id, JobWatchCursor* cursor, absl::Time deadline,
      CancelledFn cancelled = NeverCancelled);

  // Every step metric reported for the job, in arrival order (about 100
  // bytes each: a long job's answer can pass gRPC's default 4 MiB receive
  // limit, so clients raise theirs or follow WatchJob, which splits them),
  // and the latest counters of each of its PS shards, by shard.
  // NOT_FOUND: unknown job.
  [[nodiscard]] absl::StatusOr<GetMetricsResponse> GetMetrics(
      const GetMetricsRequest& request) const;

  // The job's log lines from `from_seq` on (those about one rank when the
  // request names it), oldest first, with the job's state. NOT_FOUND for
  // an unknown job, INVALID_ARGUMENT for a rank outside it or a negative
  // from_seq. Workers send the lines with ReportMetrics (log_lines).
  [[nodiscard]] absl::StatusOr<GetJobLogsResponse> GetJobLogs(
      const GetJobLogsRequest& request) const;

  // Every worker, then every parameter server, live and lost, in
  // registration order, the link facts in force, and the advertised address.
  ListWorkersResponse ListWorkers() const;

  // The address daemons and users reach the coordinator at
  // (ListWorkersResponse.coordinator_address), set by its server once the
  // port is bound (common/advertised_address.h).
  void SetAdvertisedAddress(std::string address);

  // Asks a PENDING, RENDEZVOUS or RUNNING job to synchronise through
  // request.mode from the next step boundary its ranks agree on: numbers
  // the request (epoch), places PS shards first when the mode is PS and the
  // job has none (or some sit on a lost server), writes the directive and
  // queues the notices (see the top of this file). Returns the epoch and
  // the job's status.
  // INVALID_ARGUMENT: mode is not RING or PS. NOT_FOUND: unknown job.
  // FAILED_PRECONDITION: the job ended, PS mode with no live parameter
  // server, or PS mode for a job with 16-bit gradients (the PS takes fp32
  // only so far). Errors change nothing.
  [[nodiscard]] absl::StatusOr<SwitchJobResponse> SwitchJob(
      const SwitchJobRequest& request);

  // Replaces the link facts of --mode auto's model (state.links; logged
  // and saved, with their source) and returns them. Jobs use them from
  // their next decision on. INVALID_ARGUMENT for a negative or non-finite
  // value (0 GB/s: unknown), or a source over kMaxLinkFactsSourceBytes or
  // of several lines; errors change nothing.
  [[nodiscard]] absl::StatusOr<ClusterLinkFacts> SetLinkFacts(
      const SetLinkFactsRequest& request);

  // ---- parameter servers ----

  // Adds a parameter server with a fresh id "ps-<n>" and starts its lease
  // (lease_ms and heartbeat_ms as for workers). A live server registered
  // before at the same address is declared lost (it was replaced).
  // INVALID_ARGUMENT: empty host, or an address that is not host:port
  // (nothing added). FAILED_PRECONDITION: another wire_version, or a
  // loopback address from another host's `peer`, as for workers (naming
  // --listen).
  [[nodiscard]] absl::StatusOr<RegisterParameterServerResponse>
  RegisterParameterServer(const RegisterParameterServerRequest& request,
                          const DaemonCaller& caller = {});

  // Renews the server's lease and keeps the shard counters it reports (as
  // the latest of each job's shard). The reply lists the reported jobs that
  // do not run any more (ended, dropped from the table, or unknown to this
  // coordinator): the server should drop their shards.
  // INVALID_ARGUMENT: a shard with an empty job id or a negative index
  // (nothing recorded, lease not renewed). NOT_FOUND: unknown server, or
  // one declared lost (register again).
  [[nodiscard]] absl::StatusOr<PsHeartbeatResponse> PsHeartbeat(
      const PsHeartbeatRequest& request);

  // Withdraws a server that is shutting down: as a lost lease, but at
  // once; the jobs in PS mode with shards on it fail naming it and the
  // reason. NOT_FOUND: unknown, or already lost; PERMISSION_DENIED: a
  // wrong credential.
  [[nodiscard]] absl::Status DeregisterParameterServer(
      const DeregisterParameterServerRequest& request);

  // ---- leases and lifecycle ----

  // Declares lost every live worker whose last heartbeat is more than the
  // lease before `now`: each job with ranks on it fails with "worker w-2 on
  // host H (ranks 2, 3) lost: no heartbeat for 5.0 s; last step reported
  // 37; ...", and the job's other workers are told to cancel. Then the same
  // for parameter servers: each placed job (RENDEZVOUS or RUNNING) with
  // shards on a lost server whose current mode (JobStatus.mode) is PS fails
  // with "parameter server ps-1 at ADDR (shard 1 of 2) was lost: no
  // heartbeat for 5.0 s (lease 5s); restart it and resubmit the job"; jobs
  // running in ring mode keep running. Returns the ids of the workers, then
  // of the servers, declared lost.
  std::vector<std::string> CheckLeases(absl::Time now);

  // Starts a thread that calls CheckLeases(clock()) every
  // lease_check_interval until Shutdown. Later calls do nothing.
  void StartLeaseChecks();

  // Stops the lease thread and makes every blocked and later blocking call
  // return UNAVAILABLE within a wait slice. Idempotent.
  void Shutdown();

  // Appends the coordinator's Prometheus series (coordinator_metrics.h),
  // read under the state's lock, heartbeat ages as of config.clock. The
  // daemon's MetricsRegistry calls it at every scrape (a MetricsCollector).
  void CollectMetrics(std::vector<MetricFamily>* out) const;

  // The store behind the rendezvous calls (for tests and diagnostics).
  MemoryStore* store() { return &state_.store; }

 private:
  CoordinatorService(CoordinatorConfig config, const SavedMeta& saved);

  // OK when the live workers' job memory holds the spec's ranks by its
  // estimate; RESOURCE_EXHAUSTED with the estimate and the limits.
  [[nodiscard]] absl::Status CheckJobMemoryLocked(const JobSpec& spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // AdmitDaemon, with a refusal written to the event log.
  [[nodiscard]] absl::Status Admit(absl::string_view what,
                                   absl::string_view join_token,
                                   const DaemonCaller& caller);

  // Takes the records of `saved` (just loaded from the state store): the
  // daemons get fresh leases, so that they can re-attach with their old ids
  // and credentials; RUNNING and PENDING jobs go on; a job caught at
  // rendezvous fails (its barriers are not saved), and restarts if its
  // spec allows. Saves the result (the new incarnation).
  void RestoreLocked(const SavedState& saved)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Saves what the call that produced `result` changed (the state store's
  // write-ahead: before the caller hears of it), then hands `result` on.
  template <typename Result>
  Result Saved(Result result) {
    absl::MutexLock lock(&state_.mu);
    state_.SaveLocked();
    return result;
  }

  void LeaseCheckLoop();

  // state_.links as the proto.
  ClusterLinkFacts LinkFactsLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState state_;
  JobLifecycle lifecycle_{&state_};
  JobRendezvous rendezvous_{&state_};
  JobProgress progress_{&state_, &lifecycle_};
  DaemonLeases leases_{&state_, &lifecycle_};

  // Start and stop of the lease thread, apart from the state's mutex so
  // that Shutdown can join it without holding that.
  absl::Mutex thread_mu_;
  std::thread lease_thread_ ABSL_GUARDED_BY(thread_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_SERVICE_H_
