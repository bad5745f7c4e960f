// The `gradsync-worker` daemon: command line, device checks, the Agent with
// the job runner, and the wait for SIGINT/SIGTERM. Kept out of main.cc so
// that tests run it in-process with their own coordinator connection and
// stop condition (WorkerDaemonHooks), as ps_daemon.h does for gradsync-ps.
//
//   gradsync-worker --coordinator 127.0.0.1:29400 --devices cpu:4
//                   --address 127.0.0.1
//
// It registers this host's devices with the coordinator, runs the ranks of
// the jobs it is given (one thread per rank) and, after each job, waits for
// the next one. The coordinator's address comes from --coordinator, else
// $GRADSYNC_COORDINATOR, else 127.0.0.1:29400. Logs one line per event on
// stderr, with a timestamp. Exit codes: 0 after a signal, 1 if it cannot
// start, 2 on a bad command line or devices this build or host cannot use.
#ifndef GRADSYNC_WORKER_DAEMON_WORKER_DAEMON_H_
#define GRADSYNC_WORKER_DAEMON_WORKER_DAEMON_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"
#include "worker/daemon/job_runner.h"

namespace gradsync {

struct WorkerDaemonConfig {
  std::string coordinator = std::string(kDefaultCoordinatorAddress);
  std::string devices = "cpu";  // ParseDevices syntax
  // --address: the IP peers reach this worker's ranks on. Empty: the
  // address of the interface that reaches the coordinator
  // (LocalAddressToward, as Gloo and NCCL pick theirs), else 127.0.0.1.
  std::string address;
  std::string host;  // empty: this machine's host name
  absl::Duration collective_timeout = absl::Seconds(60);
  absl::Duration rendezvous_timeout = absl::Seconds(120);
  std::string tcp_congestion = "auto";
  std::string transport = "auto";  // JobRunnerConfig::transport
  std::optional<int> spin_polls;   // unset: auto
  // Directories jobs may read and write checkpoints in (security/path_roots.h);
  // empty: anywhere this process may.
  std::vector<std::string> checkpoint_roots;
  // --allow-entrypoints: run entrypoint jobs (the user's own program, one
  // process per rank: worker/launch/); off by default.
  bool allow_entrypoints = false;
  // --join-token-file: the cluster's join token, sent when registering
  // (server/coordinator/daemon_admission.h); empty: none.
  std::string join_token_file;
  // --workdir-root: where an entrypoint job's workdir may be; empty:
  // anywhere this process may.
  std::vector<std::string> workdir_roots;
  // --python-path: the gradsync Python package's directory, first on the
  // entrypoint processes' PYTHONPATH; empty: found beside this binary.
  std::string python_path;
  // --tls-dir / --insecure: the security of the coordinator channel and of
  // the jobs' PS connections.
  TlsOptions tls;
  // --ps-plaintext: the jobs' PS connections in plaintext, whatever `tls`
  // says (the coordinator channel keeps it).
  bool ps_plaintext = false;
  // --ps-transport: how the jobs' PS steps move tensors when their spec
  // does not say (server/ps/transport/ps_transport.h): "plane" (the default) or
  // "grpc".
  std::string ps_transport = kDefaultPsTransport;
  // --max-jobs: AgentConfig::max_jobs (0: one per device).
  int max_jobs = 0;
  // --max-job-memory: AgentConfig::max_job_memory_bytes (0: the host's
  // physical memory).
  uint64_t max_job_memory = 0;
  // --metrics-listen: where to serve Prometheus metrics
  // (worker_metrics.h); empty: nowhere.
  std::string metrics_listen;
  // --health-listen: the plaintext probe port (observability/health_server.h),
  // ready while registered with the coordinator; empty: none.
  std::string health_listen;
  bool help = false;
  bool version = false;
};

// Parses argv (common/flags.h; --coordinator falls back to
// $GRADSYNC_COORDINATOR through `env`). INVALID_ARGUMENT naming the bad
// flag; the congestion control is checked against the kernel's.
[[nodiscard]] absl::StatusOr<WorkerDaemonConfig> ParseWorkerDaemonFlags(
    int argc, char** argv, const EnvLookup& env = ProcessEnv);

// The usage text, its flags wrapped to `width` columns.
std::string WorkerDaemonUsage(int width = 80);

// What the daemon uses beyond its config; unset ones take the defaults.
struct WorkerDaemonHooks {
  // The coordinator's client; default: a gRPC client over
  // NewCoordinatorChannel(coordinator) with the daemon's security.
  std::function<std::shared_ptr<CoordinatorClient>(
      const std::string& coordinator)>
      connect_coordinator;
  // Returns when the daemon should stop, with the reason its jobs are
  // cancelled with; default: blocks SIGINT and SIGTERM in the calling
  // thread before any thread starts, then waits for one.
  std::function<std::string()> wait_for_stop;
  // One line per event; default: stderr with a timestamp.
  LogFn log;
  // Called with the /metrics endpoint's bound "host:port" once it serves
  // (only with --metrics-listen); tests learn a port-0 endpoint's port.
  std::function<void(const std::string& address)> metrics_serving;
  // The same for the --health-listen port.
  std::function<void(const std::string& address)> health_serving;
};

// Runs the daemon until the stop condition; returns the exit code (2 for
// --tls-dir files it cannot use).
int RunWorkerDaemon(const WorkerDaemonConfig& config,
                    const WorkerDaemonHooks& hooks = WorkerDaemonHooks());

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_WORKER_DAEMON_H_
