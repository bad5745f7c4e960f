// TestCluster: a real gradsync cluster on loopback for integration tests —
// one gradsync-coordinator process on 127.0.0.1:0, N gradsync-worker
// processes (host names node-a, node-b, ...) and P gradsync-ps processes
// (parameter servers on 127.0.0.1:0), each with its log file in a
// fresh temporary directory — plus the coordinator's gRPC stub and
// blocking helpers that all wait with a deadline.
//
//   TestClusterOptions options;
//   options.workers = 2;
//   options.devices_per_worker = 2;      // 4 CPU ranks in all
//   ASSIGN_OR_RETURN(std::unique_ptr<TestCluster> cluster,
//                    TestCluster::Start(options));
//   ASSIGN_OR_RETURN(std::string job, cluster->Submit(spec));
//   ASSIGN_OR_RETURN(JobStatus end,
//                    cluster->WaitForJobEnd(job, absl::Seconds(60)));
//
// Placement: the coordinator places a job's ranks in (host, worker, device)
// order, so with free workers rank 0 lands on node-a.
//
// Errors: every helper returns the coordinator's status code and message
// unchanged for a failed RPC (each RPC has a deadline), and
// DEADLINE_EXCEEDED saying what was awaited and the last state seen when a
// wait runs out. Start returns the first error with every log so far.
// Threading: one thread at a time.
#ifndef GRADSYNC_TESTS_INTEGRATION_TEST_CLUSTER_H_
#define GRADSYNC_TESTS_INTEGRATION_TEST_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.grpc.pb.h"
#include "tests/integration/child_process.h"

namespace gradsync {
namespace testing {

struct TestClusterOptions {
  int workers = 2;
  int devices_per_worker = 2;
  int parameter_servers = 0;
  // Each worker runs in its own directory, log_dir()/WorkerHost(i), as if
  // on its own disk: a relative checkpoint directory is per host.
  bool worker_dirs = false;
  // The coordinator's --lease-ms and --heartbeat-ms.
  int64_t lease_ms = 5000;
  int64_t heartbeat_ms = 250;
  // The coordinator keeps its state in log_dir()/coordinator.db
  // (--state-db), so that RestartCoordinator finds it again.
  bool state_db = false;
  // For the coordinator's address and every worker's registration.
  absl::Duration start_timeout = absl::Seconds(60);
  // Mutual TLS: `gradsync certs init` into log_dir()/tls, every daemon
  // with --tls-dir on it and the stub with the users' certificate. False:
  // every daemon runs --insecure (whatever GRADSYNC_TLS_DIR says).
  bool tls = false;
  // With tls: workers and parameter servers also get --ps-plaintext.
  bool ps_plaintext = false;
  // The workers' --ps-transport: "plane" (their default; every parameter
  // server serves one, gradsync-ps's default) or "grpc".
  std::string ps_transport = "plane";
  // Every daemon also serves its probes: --metrics-listen and
  // --health-listen on 127.0.0.1:0 (their addresses are in the logs).
  bool probes = false;
};

class TestCluster {
 public:
  // Deadline of every unary RPC the helpers make.
  static constexpr absl::Duration kRpcTimeout = absl::Seconds(30);

  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TestCluster>> Start(
      const TestClusterOptions& options);

  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;
  // Stop(); the log directory stays unless RemoveLogs was called.
  ~TestCluster();

  const TestClusterOptions& options() const { return options_; }
  const std::string& address() const { return address_; }
  const std::string& log_dir() const { return log_dir_; }
  // log_dir()/tls with options.tls, else "".
  std::string tls_dir() const;
  Coordinator::Stub& stub() { return *stub_; }

  int num_workers() const { return static_cast<int>(workers_.size()); }
  ChildProcess& worker(int i) { return *workers_[i]; }
  ChildProcess& coordinator() { return *coordinator_; }
  int num_parameter_servers() const {
    return static_cast<int>(parameter_servers_.size());
  }
  ChildProcess& parameter_server(int i) { return *parameter_servers_[i]; }
  // The address parameter server i serves on (its first stdout line).
  const std::string& parameter_server_address(int i) const {
    return ps_addresses_[i];
  }
  // The index of the parameter server serving at `address`; -1: none.
  int ParameterServerAt(const std::string& address) const {
    for (int i = 0; i < num_parameter_servers(); ++i) {
      if (ps_addresses_[i] == address) return i;
    }
    return -1;
  }
  // The coordinator's id of worker i (registered with host WorkerHost(i)).
  const std::string& worker_id(int i) const { return worker_ids_[i]; }
  // "node-a", "node-b", ...
  static std::string WorkerHost(int i);
  // Worker i's current directory: log_dir()/WorkerHost(i) with
  // options.worker_dirs, else the test's.
  std::string WorkerDir(int i) const;

  // ---- RPCs (each with kRpcTimeout) ----
  [[nodiscard]] absl::StatusOr<std::string> Submit(const JobSpec& spec);
  [[nodiscard]] absl::StatusOr<JobStatus> GetJob(const std::string& job_id);
  [[nodiscard]] absl::StatusOr<JobStatus> Cancel(const std::string& job_id);
  [[nodiscard]] absl::StatusOr<ListJobsResponse> ListJobs();
  [[nodiscard]] absl::StatusOr<ListWorkersResponse> ListWorkers();
  [[nodiscard]] absl::StatusOr<std::vector<StepMetrics>> GetMetrics(
      const std::string& job_id);
  // Metrics with the PS shards' counters.
  [[nodiscard]] absl::StatusOr<GetMetricsResponse> GetMetricsResponseOf(
      const std::string& job_id);
  // SwitchJob: returns the request's epoch.
  [[nodiscard]] absl::StatusOr<int64_t> Switch(const std::string& job_id,
                                               SyncMode mode);

  // ---- waits ----

  // Follows WatchJob until `done` holds for the job's status; returns that
  // status. FAILED_PRECONDITION when the job ended without `done` holding,
  // DEADLINE_EXCEEDED after `timeout`; both name `what` and the last state.
  [[nodiscard]] absl::StatusOr<JobStatus> WaitForJob(
      const std::string& job_id,
      const std::function<bool(const JobStatus&)>& done, absl::Duration timeout,
      absl::string_view what);

  // WaitForJob until SUCCEEDED, FAILED or CANCELLED.
  [[nodiscard]] absl::StatusOr<JobStatus> WaitForJobEnd(
      const std::string& job_id, absl::Duration timeout);

  // Submits `spec`, waits up to `timeout` for the job to end and returns
  // its final status and step metrics; FAILED_PRECONDITION with the job's
  // message unless it SUCCEEDED.
  struct FinishedJob {
    JobStatus status;
    std::vector<StepMetrics> metrics;
  };
  [[nodiscard]] absl::StatusOr<FinishedJob> RunToSuccess(
      const JobSpec& spec, absl::Duration timeout);

  // Polls ListWorkers until `done` holds; DEADLINE_EXCEEDED naming `what`
  // and the workers' last states after `timeout`.
  [[nodiscard]] absl::Status WaitForWorkers(
      const std::function<bool(const ListWorkersResponse&)>& done,
      absl::Duration timeout, absl::string_view what);

  // Waits until every live worker is idle with all its devices free.
  [[nodiscard]] absl::Status WaitForIdleWorkers(absl::Duration timeout);

  // Kills the coordinator with `signal_number` (SIGKILL: a crash), waits
  // for it to exit, and starts a new one on the same address (and, with
  // options.state_db, the same database). The daemons re-attach by
  // themselves.
  [[nodiscard]] absl::Status RestartCoordinator(int signal_number);

  // ---- teardown ----

  // Stops the workers, then the coordinator (SIGTERM, then SIGKILL after a
  // grace period). Returns one line per process saying how it ended.
  // Idempotent.
  std::string Stop();

  // Every process's log under a header, for a failing test's output.
  std::string DumpLogs() const;

  // Deletes the log directory (after a passing test).
  void RemoveLogs();

 private:
  TestCluster(const TestClusterOptions& options, std::string log_dir);

  // What every daemon gets: --tls-dir DIR or --insecure, as options.tls
  // says, and the probes' flags with options.probes.
  std::vector<std::string> CommonArgs() const;
  // On `listen` ("127.0.0.1:0": a free port).
  [[nodiscard]] absl::Status StartCoordinator(const std::string& listen);
  [[nodiscard]] absl::Status StartWorkers();
  [[nodiscard]] absl::Status StartParameterServers();

  const TestClusterOptions options_;
  const std::string log_dir_;
  std::string address_;
  std::unique_ptr<ChildProcess> coordinator_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
  std::vector<std::string> worker_ids_;
  std::vector<std::unique_ptr<ChildProcess>> parameter_servers_;
  std::vector<std::string> ps_addresses_;
  std::unique_ptr<Coordinator::Stub> stub_;
  std::string stop_report_;
  int coordinator_starts_ = 0;  // restarts so far
  bool stopped_ = false;
};

// "JOB_STATE_RUNNING" -> "RUNNING", for messages.
std::string ShortStateName(JobState state);

// True for SUCCEEDED, FAILED and CANCELLED.
bool IsEnded(JobState state);

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_INTEGRATION_TEST_CLUSTER_H_
