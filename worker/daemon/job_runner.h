// JobRunner: runs the ranks of one job placed on this worker (an
// Assignment from the coordinator), one thread per rank, and reports their
// lifecycle and step metrics to the coordinator.
//
// Lifecycle of the runner (its own thread):
//   spec -> TrainerConfig (a bad spec fails every local rank at once)
//   BLAS threads acquired (blas_policy.h), data loaded ONCE and shared
//   one thread per local rank, on the Assignment's device of that rank
//   (devices(i) hosts ranks(i)): a copy of the TrainerConfig with
//   cuda_device set (-1 for cpu); a cuda rank trains its mlp on that GPU,
//   syncing through NCCL on the ring when the job's ring backend resolves
//   to it ("auto" does for an mlp on cuda; worker/train/cuda_device_ring.h),
//   host-staged otherwise (models/mlp/cuda_train_model.h):
//     rendezvous: a TCP communicator through a CoordinatorStore scoped to
//       (worker, job, generation), TcpOptions.job_id "<job>/<generation>",
//       listening on the worker's address
//     ReportRank READY
//     Trainer::Create (a cuda rank on a host without that GPU, or a worker
//       built without CUDA kernels, fails here: FAILED "trainer setup"
//       with the FAILED_PRECONDITION naming the device; its peers fail on
//       the aborted communicator)
//     Trainer::Run (PS shards at the Assignment's ps_addresses; runtime
//       switch requests from NotifySwitch, their directives read from
//       the store's "switch/<epoch>"), metrics queued to a MetricsReporter
//       (never blocks)
//     metrics flushed, then ReportRank SUCCEEDED (with the test accuracy
//       and loss) or FAILED (step, operation, message)
//   BLAS released, Done() becomes true: the devices are free again and the
//   daemon can take the next job without restarting.
//
// Cancel(reason) (the coordinator cancelled the job, or the daemon stops)
// sets the trainers' cancel flag, cancels rendezvous calls in flight and
// aborts every communicator and trainer, so that ranks blocked in a
// collective or waiting on a parameter server return at once; each rank then
// reports FAILED quoting the reason (the coordinator ignores reports for jobs
// that already ended). A rank still in the TCP rendezvous, which cannot be
// interrupted, is abandoned: its helper thread ends on its own by the
// rendezvous timeout.
//
// Errors: Start returns INVALID_ARGUMENT for a malformed assignment (no
// ranks, a rank outside [0, world_size), devices not matching the ranks,
// a device that is neither cpu:<n> nor cuda:<n>)
// or a config without a worker id / BLAS policy; every later error is
// reported to the coordinator as the failure of a rank, and logged.
// Threading: Cancel, Done and Join are thread-safe; the destructor cancels
// and joins.
#ifndef GRADSYNC_WORKER_DAEMON_JOB_RUNNER_H_
#define GRADSYNC_WORKER_DAEMON_JOB_RUNNER_H_

#include <atomic>
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
#include "collectives/all_reduce_algorithm.h"
#include "collectives/communicator.h"
#include "proto/coordinator.pb.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"
#include "server/ps/transport/ps_transport.h"
#include "worker/daemon/blas_policy.h"
#include "worker/daemon/coordinator_store.h"
#include "worker/daemon/metrics_reporter.h"
#include "worker/daemon/worker_metrics.h"
#include "worker/train/train_config.h"
#include "worker/train/train_data.h"
#include "worker/train/trainer.h"

namespace gradsync {

// A job running on this worker, as the agent sees it (tests fake it).
class JobHandle {
 public:
  virtual ~JobHandle() = default;
  // Stops the job's ranks as soon as possible; does not block.
  virtual void Cancel(const absl::Status& reason) = 0;
  // True once every rank thread has ended.
  virtual bool Done() const = 0;
  // Blocks until Done().
  virtual void Join() = 0;
  // A runtime switch request (the coordinator's epoch) for the job; the
  // ranks pick the newest up at their next step. Does not block.
  virtual void NotifySwitch(int64_t epoch) = 0;
};

struct JobRunnerConfig {
  std::string worker_id;
  // The worker's credential (RegisterWorkerResponse): the job's reports and
  // store calls carry it.
  std::string credential;
  std::string coordinator;  // "host:port", for messages
  // The host name the worker registered with (TrainerConfig.host).
  std::string host;
  // The worker's data-plane address: ranks listen and advertise here.
  std::string listen_host = "127.0.0.1";
  // Until every peer is connected.
  absl::Duration rendezvous_timeout = absl::Seconds(120);
  // Per collective (the TCP backend names the late peer when it expires).
  absl::Duration collective_timeout = absl::Seconds(60);
  // TCP congestion control policy (common/tcp_congestion.h) of the jobs'
  // TCP communicators and of their connections to the PS shards.
  std::string tcp_congestion_control = "auto";
  // TcpOptions::transport of the jobs' communicators: "auto" (shared
  // memory between ranks on one host), "tcp" or "shm"; checked by
  // ParseTransport.
  std::string transport = "auto";
  // Mutual TLS or plaintext of the jobs' connections to the PS shards
  // (security/tls.h); the daemon's --tls-dir.
  GrpcSecurity grpc_security;
  // How PS steps move tensors unless the job's spec says (--ps-transport;
  // server/ps/transport/ps_transport.h).
  std::string ps_transport = kDefaultPsTransport;
  // TcpOptions::spin_polls for every job; unset: TcpOptions' default, or
  // none on a host with more of the job's ranks than cores
  // (SpinPollsForHost).
  std::optional<int> spin_polls;
  // Where a job's checkpoints may be (security/path_roots.h); a job naming
  // another path fails before it starts, and the roots hold until it ends
  // (TrainerConfig::checkpoint_roots: a directory swapped for a link
  // mid-job fails its next checkpoint). Empty: anywhere.
  std::vector<std::string> checkpoint_roots;
  // Unary RPCs to the coordinator (ReportRank, ReportMetrics).
  absl::Duration rpc_timeout = absl::Seconds(10);
  BlasThreadPolicy* blas = nullptr;  // required; owned by the daemon
  // Device use, step costs and all-reduce latencies for /metrics
  // (worker_metrics.h); owned by the daemon. Null: none recorded.
  WorkerMetrics* metrics = nullptr;
  LogFn log;
};

// How the job's PS steps move tensors: its spec's ps.transport, else the
// daemon's --ps-transport.
inline std::string PsTransportOf(const JobSpec& spec,
                                 const JobRunnerConfig& config) {
  return spec.ps().transport().empty() ? config.ps_transport
                                       : spec.ps().transport();
}

// INVALID_ARGUMENT for an assignment without a job id, ranks, or with
// ranks outside its world size, repeated, or on devices other than
// cpu:<n> and cuda:<n>.
[[nodiscard]] absl::Status ValidateAssignment(const Assignment& assignment);

// The scope of a job's store calls: this worker, its credential, the job
// and its rendezvous generation.
StoreScope JobStoreScope(const Assignment& assignment,
                         const JobRunnerConfig& config);

// A job runner's log line: to the daemon's log as "job <id>: <line>", and
// to the job's log through `reporter` (for `gradsync logs`).
void LogJobLine(const JobRunnerConfig& config, absl::string_view job_id,
                MetricsReporter& reporter, absl::string_view line);

// The options of a job's MetricsReporter: the config's RPC timeout and
// credential.
MetricsReporterOptions JobReporterOptions(const JobRunnerConfig& config);

class JobRunner final : public JobHandle {
 public:
  // Validates `assignment` and starts the runner thread.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<JobRunner>> Start(
      const Assignment& assignment, JobRunnerConfig config,
      std::shared_ptr<CoordinatorClient> client);

  ~JobRunner() override;

  void Cancel(const absl::Status& reason) override;
  bool Done() const override { return done_.load(); }
  void Join() override;
  void NotifySwitch(int64_t epoch) override;

  const std::string& job_id() const { return assignment_.job_id(); }

 private:
  JobRunner(const Assignment& assignment, JobRunnerConfig config,
            std::shared_ptr<CoordinatorClient> client);

  void Main();
  // Runs `rank` on `device` ("cpu:0", "cuda:1") with its own copy of the
  // job's config (cuda_device set from the Assignment).
  void RunRank(int rank, const std::string& device,
               const TrainerConfig& config);
  // Connects `rank` to its peers with the all-reduce `algorithm` (the
  // job's TrainerConfig::ring_algorithm); CANCELLED as soon as the job is
  // cancelled, even while the TCP rendezvous waits for peers (see .cc).
  [[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>> Rendezvous(
      int rank, AllReduceAlgorithm algorithm);
  // The NCCL communicators of an NCCL-ring rank (null otherwise, or when
  // this worker was built without NCCL: the trainer then refuses the job).
  DeviceCommFactory DeviceComms(int rank, const TrainerConfig& config);
  // Reports `state` for `rank`, retrying briefly while the coordinator is
  // unreachable; logs failures.
  void Report(int rank, RankState state, int64_t step,
              absl::string_view operation, absl::string_view message,
              const TrainResult* result = nullptr);
  // Reports FAILED at step 0 for every local rank.
  void FailAll(absl::string_view operation, const absl::Status& status);
  // Makes `comm` abortable by Cancel; false (and aborts it) if the job was
  // cancelled already.
  bool Register(Communicator* comm);
  void Unregister(Communicator* comm);
  // The same for a trainer (whose PS calls a cancel must end too).
  void Register(Trainer* trainer);
  void Unregister(Trainer* trainer);
  // "the rank was cancelled: <reason>", once cancelled.
  std::string CancelMessage();
  void Log(absl::string_view line) const;

  const Assignment assignment_;
  const JobRunnerConfig config_;
  const std::shared_ptr<CoordinatorClient> client_;
  // Shared with rendezvous helpers that may outlive the runner (RunRank).
  const std::shared_ptr<CoordinatorStore> store_;
  // Mutable: Log (const) hands it the job's log lines; it is thread-safe.
  mutable MetricsReporter reporter_;

  // Written by Main before the rank threads start; read-only afterwards.
  TrainerConfig train_config_;
  TrainData data_;

  std::atomic<bool> cancelled_{false};
  // The newest runtime switch request heard (Trainer's SwitchSource).
  std::atomic<int64_t> heard_switch_epoch_{0};
  std::atomic<bool> done_{false};

  absl::Mutex mu_;
  absl::Status cancel_reason_ ABSL_GUARDED_BY(mu_);
  std::vector<Communicator*> comms_ ABSL_GUARDED_BY(mu_);
  std::vector<Trainer*> trainers_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::thread main_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_JOB_RUNNER_H_
