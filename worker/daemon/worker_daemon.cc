#include "worker/daemon/worker_daemon.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collectives/tcp/tcp_communicator.h"
#include "common/advertised_address.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "observability/health_server.h"
#include "observability/metrics_http.h"
#include "security/path_roots.h"
#include "security/secret.h"
#include "server/coordinator/grpc_coordinator_client.h"
#include "server/ps/transport/ps_transport.h"
#include "worker/daemon/agent.h"
#include "worker/daemon/blas_policy.h"
#include "worker/daemon/devices.h"
#include "worker/daemon/worker_metrics.h"
#include "worker/launch/leftovers.h"
#include "worker/launch/python_dir.h"
#include "worker/model/blas.h"
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
#include "common/cuda_status.h"
#endif

namespace gradsync {
namespace {

// The flag table, writing into `config`.
std::vector<FlagSpec> WorkerFlags(WorkerDaemonConfig* config) {
  auto seconds = [](const char* flag, absl::Duration* out) {
    return [flag, out](absl::string_view value) {
      int64_t s = 0;
      if (!absl::SimpleAtoi(value, &s) || s <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, " '", value, "' is not a positive number of seconds"));
      }
      *out = absl::Seconds(s);
      return absl::OkStatus();
    };
  };
  std::vector<FlagSpec> flags = {
      StringFlag("coordinator", "HOST:PORT",
                 "the coordinator (default 127.0.0.1:29400)",
                 &config->coordinator)
          .Env("GRADSYNC_COORDINATOR"),
      StringFlag("devices", "LIST",
                 "ranks this worker hosts: cpu, cpu:4 (four CPU ranks), "
                 "cuda:0,1 (one rank per GPU; refused at start unless "
                 "visible) (default cpu)",
                 &config->devices),
      StringFlag("address", "IP",
                 "address the ranks listen on and that peers connect to "
                 "(default: the address of the interface that reaches the "
                 "coordinator)",
                 &config->address),
      StringFlag("advertise", "IP",
                 "the same as --address, named as the PS's and Gloo's "
                 "flag is (a rank's ports are picked per job)",
                 &config->address),
      StringFlag("host", "NAME",
                 "host name reported to the coordinator (default: this "
                 "machine's)",
                 &config->host),
      FlagSpec("collective-timeout-s", "N",
               "a collective waiting longer on a peer fails the job, naming "
               "the peer (default 60)",
               seconds("--collective-timeout-s", &config->collective_timeout)),
      FlagSpec("rendezvous-timeout-s", "N",
               "how long ranks wait for all peers to connect (default 120)",
               seconds("--rendezvous-timeout-s", &config->rendezvous_timeout)),
      FlagSpec("tcp-congestion", "NAME",
               "congestion control of the ranks' TCP ring and PS "
               "connections: auto (reno to peers on this host, the "
               "system's elsewhere), default (the system's), or an "
               "algorithm the kernel allows (default auto)",
               [config](absl::string_view value) {
                 config->tcp_congestion = std::string(value);
                 absl::Status s =
                     CheckCongestionControl(config->tcp_congestion);
                 if (s.ok()) return s;
                 return absl::InvalidArgumentError(
                     absl::StrCat("--tcp-congestion: ", s.message()));
               }),
      FlagSpec("transport", "NAME",
               "what carries the ranks' collectives: auto (shared memory "
               "between ranks on one host, TCP between hosts), tcp, or shm "
               "(default auto)",
               [config](absl::string_view value) {
                 config->transport = std::string(value);
                 return ParseTransport(value).status();
               }),
      FlagSpec("spin-polls", "auto|N",
               "polls before a small collective's receive blocks: auto "
               "(10000, or none when the job has more ranks on this host "
               "than it has cores), or N for every job (default auto)",
               [config](absl::string_view value) {
                 int polls = 0;
                 if (value == "auto") {
                   config->spin_polls.reset();
                 } else if (absl::SimpleAtoi(value, &polls) && polls >= 0) {
                   config->spin_polls = polls;
                 } else {
                   return absl::InvalidArgumentError(
                       absl::StrCat("--spin-polls '", value,
                                    "' is neither auto nor a count >= 0"));
                 }
                 return absl::OkStatus();
               }),
      FlagSpec("checkpoint-root", "DIR[,DIR...]",
               "directories jobs may read and write checkpoints in; a job "
               "naming another path fails, links included (default: "
               "anywhere this process may)",
               [config](absl::string_view value) {
                 absl::StatusOr<std::vector<std::string>> roots =
                     ParseRoots(value);
                 if (!roots.ok()) return roots.status();
                 config->checkpoint_roots = *std::move(roots);
                 return absl::OkStatus();
               }),
      FlagSpec("workdir-root", "DIR[,DIR...]",
               "directories an entrypoint job's workdir must lie under, "
               "links resolved (default: anywhere this process may)",
               [config](absl::string_view value) {
                 absl::StatusOr<std::vector<std::string>> roots =
                     ParseRoots(value);
                 if (!roots.ok()) return roots.status();
                 config->workdir_roots = *std::move(roots);
                 return absl::OkStatus();
               }),
      StringFlag("python-path", "DIR",
                 "the gradsync Python package's directory, put first on "
                 "entrypoint processes' PYTHONPATH (default: the build's "
                 "or the installed package beside this binary)",
                 &config->python_path),
  };
  flags.push_back(StringFlag(
      "join-token-file", "FILE",
      "the cluster's join token, which a coordinator started with "
      "--join-token-file wants before it lets a worker register (a copy of "
      "its file, readable by this daemon only)",
      &config->join_token_file));
  flags.push_back(SwitchFlag(
      "allow-entrypoints",
      "run entrypoint jobs: the user's own program (e.g. a PyTorch script), "
      "one process per rank. It lets every holder of the user token run "
      "code as this daemon's user; off by default (docs/security.md)",
      &config->allow_entrypoints));
  AddTlsFlags(&config->tls, &flags);
  flags.push_back(PsPlaintextFlag(&config->ps_plaintext));
  flags.push_back(IntFlag(
      "max-jobs",
      "the most jobs this worker holds at once, running or still stopping "
      "after a cancel; an assignment beyond it fails at once (0, the "
      "default: one per device)",
      0, &config->max_jobs));
  flags.push_back(SizeFlag(
      "max-job-memory",
      "the memory the jobs' ranks on this worker may need together, by "
      "their specs' estimates (parameters, gradients, optimizer state, "
      "buffers, activations, data); beyond it a job is placed elsewhere or "
      "refused (default: the host's physical memory, or its cgroup's limit)",
      0, &config->max_job_memory));
  flags.push_back(PsTransportFlag(
      "how PS steps move tensors unless the job says (its ps.transport): "
      "plane (the default: the servers' tensor planes, plain TCP after an "
      "HMAC handshake proving the job's token; gRPC for a server without "
      "one) or grpc (gRPC streams, encrypted under TLS, at a CPU cost)",
      &config->ps_transport));
  flags.push_back(MetricsListenFlag(&config->metrics_listen));
  flags.push_back(HealthListenFlag(&config->health_listen));
  flags.push_back(HelpFlag(&config->help));
  flags.push_back(VersionFlag(&config->version));
  return flags;
}

LogFn StderrLog() {
  // One lock keeps lines from interleaving; shared by copies.
  auto log_mu = std::make_shared<absl::Mutex>();
  return [log_mu](absl::string_view line) {
    const std::string text =
        absl::StrCat(absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                                      absl::LocalTimeZone()),
                     " gradsync-worker: ", line, "\n");
    absl::MutexLock lock(log_mu.get());
    std::cerr << text << std::flush;
  };
}

// Refuses at start what no job could use, instead of failing each job.
[[nodiscard]] absl::Status CheckDevices(const std::vector<Device>& devices,
                                        const std::string& flag_value) {
  for (const Device& d : devices) {
    if (d.kind() == "cpu") continue;
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
    RETURN_IF_ERROR(gpu::RequireCudaDevice(
        d.index(), absl::StrCat("--devices ", flag_value)));
#else
    return absl::FailedPreconditionError(absl::StrCat(
        "--devices ", flag_value,
        ": this build has no CUDA kernels (CUDA was not found when it was "
        "built); use cpu or cpu:N"));
#endif
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkerDaemonConfig> ParseWorkerDaemonFlags(
    int argc, char** argv, const EnvLookup& env) {
  WorkerDaemonConfig config;
  ASSIGN_OR_RETURN(const std::vector<std::string> positional,
                   ParseFlags(argc, argv, WorkerFlags(&config), env));
  if (!positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", positional[0], "'"));
  }
  RETURN_IF_ERROR(ParseDevices(config.devices).status());
  return config;
}

std::string WorkerDaemonUsage(int width) {
  WorkerDaemonConfig unused;
  return absl::StrCat(
      "usage: gradsync-worker [flags]\n\n"
      "Runs a gradsync worker daemon until SIGINT or SIGTERM.\n\n",
      FlagsHelp(WorkerFlags(&unused), width));
}

int RunWorkerDaemon(const WorkerDaemonConfig& config,
                    const WorkerDaemonHooks& hooks) {
  const LogFn log = hooks.log ? hooks.log : StderrLog();
  absl::StatusOr<std::vector<Device>> devices = ParseDevices(config.devices);
  if (!devices.ok()) {
    log(std::string(devices.status().message()));
    return 2;
  }

  // Blocked before any thread starts (the CUDA driver's, when the device
  // check below initialises it; gRPC's), so that they inherit the mask and
  // only the sigwait below receives the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  if (!hooks.wait_for_stop) pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (absl::Status s = CheckDevices(*devices, config.devices); !s.ok()) {
    log(std::string(s.message()));
    return 2;
  }
  // An idle worker must not leave OpenBLAS at "all cores"; jobs set their
  // own count through the policy.
  if (absl::Status s = SetBlasThreads(kDefaultBlasThreadsPerRank); !s.ok()) {
    log(absl::StrCat("cannot set BLAS threads: ", s.message()));
    return 1;
  }

  absl::StatusOr<GrpcSecurity> security =
      SecurityFromOptions(config.tls, TlsRole::kDaemon);
  if (!security.ok()) {
    log(std::string(security.status().message()));
    return 2;
  }
  log(SecurityLine(*security, config.tls));
  if (config.ps_plaintext && security->tls()) log(kPsPlaintextWarning);
  const std::string host = config.host.empty() ? HostName() : config.host;
  CoordinatorChannelOptions channel;
  channel.security = *security;
  std::shared_ptr<CoordinatorClient> client =
      hooks.connect_coordinator
          ? hooks.connect_coordinator(config.coordinator)
          : NewGrpcCoordinatorClient(
                NewCoordinatorChannel(config.coordinator, channel),
                config.coordinator, DaemonCoordinatorClientOptions());

  // Declared before the runner config that points at them; the endpoint
  // stops first.
  MetricsRegistry registry;
  std::vector<std::string> device_names;
  for (const Device& d : *devices) {
    device_names.push_back(absl::StrCat(d.kind(), ":", d.index()));
  }
  absl::StatusOr<std::unique_ptr<WorkerMetrics>> metrics =
      WorkerMetrics::Create(&registry, device_names);
  if (!metrics.ok()) {
    log(std::string(metrics.status().message()));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> metrics_http =
      ServeDaemonMetrics(config.metrics_listen, &registry, "gradsync-worker");
  if (!metrics_http.ok()) {
    log(std::string(metrics_http.status().message()));
    return 1;
  }
  if (*metrics_http != nullptr) {
    log(absl::StrCat("metrics on http://", (*metrics_http)->address(),
                     "/metrics"));
    if (hooks.metrics_serving) {
      hooks.metrics_serving((*metrics_http)->address());
    }
  }

  // Live from here; ready while the agent is registered and in touch.
  absl::StatusOr<std::unique_ptr<HealthServer>> health =
      ServeDaemonHealth(config.health_listen, "gradsync-worker");
  if (!health.ok()) {
    log(std::string(health.status().message()));
    if (*metrics_http != nullptr) (*metrics_http)->Shutdown();
    return 1;
  }
  HealthServer* const probe = health->get();
  if (probe != nullptr) {
    log(absl::StrCat("health checks on ", probe->address()));
    if (hooks.health_serving) hooks.health_serving(probe->address());
  }

  // The interface that reaches the coordinator is the one the other
  // hosts reach this one on (issue 44, trap 2: a default of 127.0.0.1
  // broke multi-host jobs at the rendezvous timeout).
  std::string address = config.address;
  if (address.empty()) {
    absl::StatusOr<std::string> local = LocalAddressToward(config.coordinator);
    address = local.ok() ? *local : "127.0.0.1";
  }

  BlasThreadPolicy blas;
  JobRunnerConfig runner;
  runner.coordinator = config.coordinator;
  runner.listen_host = address;
  runner.host = host;
  runner.collective_timeout = config.collective_timeout;
  runner.rendezvous_timeout = config.rendezvous_timeout;
  runner.tcp_congestion_control = config.tcp_congestion;
  runner.transport = config.transport;
  if (!config.ps_plaintext) runner.grpc_security = *security;
  runner.ps_transport = config.ps_transport;
  runner.spin_polls = config.spin_polls;
  runner.checkpoint_roots = config.checkpoint_roots;
  runner.blas = &blas;
  runner.metrics = metrics->get();
  runner.log = log;

  EntrypointConfig entrypoint;
  entrypoint.allow = config.allow_entrypoints;
  entrypoint.workdir_roots = config.workdir_roots;
  entrypoint.tls_dir = security->tls() ? config.tls.dir : "";
  entrypoint.python_dir =
      config.python_path.empty() ? FindGradsyncPythonDir() : config.python_path;
  entrypoint.agent_tag = AgentTag(config.coordinator);
  if (config.allow_entrypoints) {
    KillLeftovers(config.coordinator, log);
    log(absl::StrCat(
        "entrypoint jobs allowed, workdirs ",
        config.workdir_roots.empty()
            ? std::string("anywhere (no --workdir-root)")
            : absl::StrCat("under ", absl::StrJoin(config.workdir_roots, ", ")),
        entrypoint.python_dir.empty()
            ? std::string("; no gradsync Python package found")
            : absl::StrCat("; gradsync package in ", entrypoint.python_dir)));
  }

  if (IsLoopbackHost(address) && !IsLoopbackHost(HostOf(config.coordinator))) {
    log(absl::StrCat(
        "WARNING: --address ", address,
        " is this host's loopback, "
        "but the coordinator ",
        config.coordinator,
        " is elsewhere: ranks on "
        "other hosts cannot reach this one, and the coordinator refuses "
        "the registration when it comes from another address; set "
        "--address to an address the other hosts reach"));
  }

  AgentConfig agent_config;
  agent_config.coordinator = config.coordinator;
  agent_config.host = host;
  agent_config.address = address;
  agent_config.devices = *devices;
  agent_config.pid = static_cast<int>(getpid());
  agent_config.max_jobs = config.max_jobs;
  agent_config.max_job_memory_bytes =
      config.max_job_memory > 0 ? static_cast<int64_t>(config.max_job_memory)
                                : PhysicalMemoryBytes();
  if (!config.join_token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(config.join_token_file);
    if (!token.ok()) {
      std::cerr << "gradsync-worker: --join-token-file: "
                << token.status().message() << "\n";
      return 2;
    }
    agent_config.join_token = *std::move(token);
  }
  agent_config.log = log;
  agent_config.hint = [security = *security](const absl::Status& status) {
    return TlsConnectHint(security, status);
  };
  if (probe != nullptr) {
    agent_config.on_contact = [probe](bool in_touch) {
      probe->SetReady(in_touch);
    };
  }
  log(absl::StrCat(
      "starting: coordinator ", config.coordinator, ", devices ",
      FormatDevices(*devices), ", address ", address, ", host ", host,
      config.checkpoint_roots.empty()
          ? "; checkpoints anywhere (no --checkpoint-root)"
          : absl::StrCat("; checkpoints under ",
                         absl::StrJoin(config.checkpoint_roots, ", "))));
  {
    Agent agent(agent_config, client,
                JobRunnerLauncher(runner, client, entrypoint));
    agent.Start();
    std::string why;
    if (hooks.wait_for_stop) {
      why = hooks.wait_for_stop();
    } else {
      int signal_number = 0;
      sigwait(&signals, &signal_number);
      why = strsignal(signal_number);
    }
    log(absl::StrCat("got ", why,
                     ", cancelling running jobs and shutting down"));
    agent.Stop(absl::CancelledError(absl::StrCat(
        "worker on host ", host, " is shutting down (", why, ")")));
  }
  if (probe != nullptr) probe->Shutdown();
  if (*metrics_http != nullptr) (*metrics_http)->Shutdown();
  log("stopped");
  return 0;
}

}  // namespace gradsync
