// Agent: the worker daemon's conversation with the coordinator. It
// registers the worker (host, data-plane address, devices), then keeps a
// heartbeat long-poll going on its own thread, which renews the lease and
// brings news:
//   an Assignment        -> a job is launched (JobRunner in the daemon);
//   a cancel_job_ids id  -> that job is cancelled (its flag set and its
//                           communicators aborted, so blocked collectives
//                           return at once);
//   NOT_FOUND            -> the coordinator does not know this worker (it
//                           was declared lost, or the coordinator
//                           restarted): its jobs are cancelled (the
//                           coordinator failed them) and it registers anew.
// Finished jobs are reaped on the same thread, so the worker's devices are
// free for the next job without a restart.
//
// State (of the loop thread):
//   UNREGISTERED --RegisterWorker ok--> REGISTERED --Heartbeat NOT_FOUND-->
//   UNREGISTERED;  any RPC error: retry after a backoff (min_backoff,
//   doubling up to max_backoff), logged with the coordinator's address;
//   Stop() from any state: STOPPED.
//
// Every RPC has a deadline: the long-poll wait plus rpc_timeout for
// Heartbeat, rpc_timeout for RegisterWorker; Stop cancels the call in
// flight.
//
// Errors: none returned; failures are logged and retried. Jobs the
// launcher cannot start are reported FAILED to the coordinator.
// Threading: thread-safe. Start once; Stop (also from the destructor)
// cancels every job, waits for them, and ends the loop.
//
// Example:
//   Agent agent(config, client, JobRunnerLauncher(runner_config, client));
//   agent.Start();
//   ... wait for SIGTERM ...
//   agent.Stop(absl::CancelledError("worker shutting down"));
#ifndef GRADSYNC_WORKER_DAEMON_AGENT_H_
#define GRADSYNC_WORKER_DAEMON_AGENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/cancellable_calls.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"
#include "worker/daemon/job_runner.h"
#include "worker/launch/entrypoint_runner.h"
#include "worker/launch/link_probe_runner.h"

namespace gradsync {

struct AgentConfig {
  std::string coordinator;  // "host:port", for messages
  std::string host;         // host name, for placement
  std::string address;      // data-plane IP peers connect to
  std::vector<Device> devices;
  int pid = 0;
  std::string join_token;  // the cluster's (daemon_admission.h); may be ""
  absl::Duration rpc_timeout = absl::Seconds(10);
  // Used when the coordinator does not say (heartbeat_ms 0).
  absl::Duration default_heartbeat = absl::Milliseconds(500);
  absl::Duration min_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
  LogFn log;
  // What to add to a failed call's message (e.g. TlsConnectHint: which
  // side runs TLS); may be empty.
  std::function<std::string(const absl::Status&)> hint;
  // Called on the loop thread after each RegisterWorker or Heartbeat: true
  // when it succeeded (the worker is registered and in touch), false when
  // it failed (the readiness of --health-listen). May be empty.
  std::function<void(bool in_touch)> on_contact;
  // The most jobs this worker holds at once, running or still stopping
  // after a cancel; an assignment beyond it fails at once (RESOURCE_
  // EXHAUSTED, naming the jobs) instead of starting more ranks. The
  // coordinator keeps a job's devices until this daemon's heartbeat no
  // longer lists the job, so this is the second line against a submit/
  // cancel storm, which once piled up jobs until the kernel killed a
  // worker. 0: one per device (every job holds at least one).
  int max_jobs = 0;
  // The memory the jobs' ranks here may need together, by their specs'
  // estimates (jobspec/job_memory.h), jobs still stopping included; an
  // assignment beyond it fails at once (RESOURCE_EXHAUSTED, with the
  // estimate). Sent at registration, so that the coordinator refuses such
  // jobs at submit and places ranks where they fit. 0: no limit.
  int64_t max_job_memory_bytes = 0;
};

// Who the worker is to the coordinator: the id and the credential that
// registration handed out (RegisterWorkerResponse). Every call for the
// worker carries both.
struct WorkerIdentity {
  std::string id;
  std::string credential;
};

// Starts the ranks of `assignment` for `worker`.
using JobLauncher = std::function<absl::StatusOr<std::unique_ptr<JobHandle>>(
    const WorkerIdentity& worker, const Assignment& assignment)>;

// The daemon's launcher: a JobRunner with `config` (worker_id and
// credential filled in), or for an entrypoint job (model.kind
// "entrypoint") an EntrypointRunner with `entrypoint` too.
JobLauncher JobRunnerLauncher(JobRunnerConfig config,
                              std::shared_ptr<CoordinatorClient> client,
                              EntrypointConfig entrypoint = {});

class Agent {
 public:
  Agent(AgentConfig config, std::shared_ptr<CoordinatorClient> client,
        JobLauncher launcher);
  ~Agent();

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Starts the loop thread (first registration included). Idempotent.
  void Start();
  // Stops heartbeating, cancels every job with `reason` and waits for them.
  // Idempotent.
  void Stop(const absl::Status& reason);

  // The id the coordinator gave, "" while unregistered.
  std::string worker_id() const;
  // How many times the worker registered (re-registrations included).
  int64_t registrations() const;
  // Ids of the jobs launched and not yet reaped.
  std::vector<std::string> jobs() const;

 private:
  void Deregister(const absl::Status& reason);
  void Loop();
  [[nodiscard]] absl::Status Register();
  // One long-poll; sets *had_news when it brought assignments/cancels.
  [[nodiscard]] absl::Status Heartbeat(bool* had_news);
  void Launch(const WorkerIdentity& worker, const Assignment& assignment);
  // Reports every rank of `assignment` FAILED at "job start" with `why`.
  void FailStart(const WorkerIdentity& worker, const Assignment& assignment,
                 const absl::Status& why);
  // config_.max_jobs, or its default.
  size_t MaxJobs() const;
  // OK when `assignment`'s ranks fit in what max_job_memory_bytes leaves
  // beside the jobs held here, by the specs' estimates; RESOURCE_EXHAUSTED
  // with the estimate otherwise.
  [[nodiscard]] absl::Status CheckJobMemory(const Assignment& assignment) const;
  // The estimate for `assignment`'s ranks here together.
  static int64_t JobMemory(const Assignment& assignment);
  void CancelJob(const std::string& job_id, const absl::Status& reason);
  void CancelAllJobs(const absl::Status& reason);
  // Joins and forgets finished jobs.
  void Reap();
  // Sleeps `d` unless Stop is called first; false when stopping.
  bool Sleep(absl::Duration d);
  bool stopping() const;
  void Log(absl::string_view line) const;

  const AgentConfig config_;
  const std::shared_ptr<CoordinatorClient> client_;
  const JobLauncher launcher_;
  CancellableCalls calls_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string worker_id_ ABSL_GUARDED_BY(mu_);
  std::string credential_ ABSL_GUARDED_BY(mu_);
  int64_t registrations_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration heartbeat_ ABSL_GUARDED_BY(mu_);
  // Jobs by id; only the loop thread adds or removes (Stop after joining
  // it), so handles may be used outside mu_ by that thread.
  std::map<std::string, std::unique_ptr<JobHandle>> jobs_ ABSL_GUARDED_BY(mu_);
  // JobMemory of each job in jobs_.
  std::map<std::string, int64_t> job_memory_ ABSL_GUARDED_BY(mu_);

  absl::Mutex thread_mu_;
  std::thread loop_ ABSL_GUARDED_BY(thread_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_AGENT_H_
