// gradsync-worker: the long-running worker daemon. It registers this host's
// devices with the coordinator, runs the ranks of the jobs it is given (one
// thread per rank) and, after each job, waits for the next one, until
// SIGINT or SIGTERM.
//
//   gradsync-worker --coordinator 127.0.0.1:29400 --devices cpu:4
//                   --address 127.0.0.1
//
// The coordinator's address comes from --coordinator, else the environment
// variable GRADSYNC_COORDINATOR, else 127.0.0.1:29400. Logs one line per
// event on stderr, with a timestamp. Exits 0 after a signal, 1 if it cannot
// start, 2 on a bad command line.
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collectives/tcp/tcp_communicator.h"
#include "server/coordinator/grpc_coordinator_client.h"
#include "worker/daemon/agent.h"
#include "worker/daemon/blas_policy.h"
#include "worker/daemon/devices.h"
#include "worker/daemon/job_runner.h"
#include "worker/model/blas.h"
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
#include "common/cuda_status.h"
#include "common/host.h"
#endif

namespace {

constexpr char kUsage[] =
    "usage: gradsync-worker [--coordinator HOST:PORT] [--devices LIST]\n"
    "                       [--address IP] [--host NAME]\n"
    "                       [--collective-timeout-s N] "
    "[--rendezvous-timeout-s N]\n"
    "                       [--tcp-congestion NAME] [--spin-polls auto|N]\n"
    "\n"
    "Runs a gradsync worker daemon until SIGINT or SIGTERM.\n"
    "\n"
    "  --coordinator HOST:PORT  the coordinator (default: $GRADSYNC_COORDINATOR"
    ",\n"
    "                           else 127.0.0.1:29400)\n"
    "  --devices LIST           ranks this worker hosts: cpu, cpu:4 (four CPU\n"
    "                           ranks), cuda:0,1 (one rank per GPU; refused\n"
    "                           at start unless visible) (default cpu)\n"
    "  --address IP             address the ranks listen on and that peers\n"
    "                           connect to (default 127.0.0.1)\n"
    "  --host NAME              host name reported to the coordinator\n"
    "                           (default: this machine's)\n"
    "  --collective-timeout-s N a collective waiting longer on a peer fails\n"
    "                           the job, naming the peer (default 60)\n"
    "  --rendezvous-timeout-s N how long ranks wait for all peers to connect\n"
    "                           (default 120)\n"
    "  --tcp-congestion NAME    congestion control of the ranks' TCP ring\n"
    "                           and PS connections: auto (reno to peers on\n"
    "                           this host, the system's elsewhere), default\n"
    "                           (the system's), or an algorithm the kernel\n"
    "                           allows (default auto)\n"
    "  --spin-polls auto|N      polls before a small collective's receive\n"
    "                           blocks: auto (10000, or none when the job has\n"
    "                           more ranks on this host than it has cores),\n"
    "                           or N for every job (default auto)\n";

constexpr char kDefaultCoordinator[] = "127.0.0.1:29400";

struct Flags {
  std::string coordinator;
  std::string devices = "cpu";
  std::string address = "127.0.0.1";
  std::string host;
  int64_t collective_timeout_s = 60;
  int64_t rendezvous_timeout_s = 120;
  std::string tcp_congestion = "auto";
  int spin_polls = -1;  // -1: auto
  bool help = false;
};

bool TakesValue(const std::string& arg) {
  return arg == "--coordinator" || arg == "--devices" || arg == "--address" ||
         arg == "--host" || arg == "--collective-timeout-s" ||
         arg == "--rendezvous-timeout-s" || arg == "--tcp-congestion" ||
         arg == "--spin-polls";
}

// Parses argv into `flags`; false (after saying why) on a bad command line.
bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      flags->help = true;
      return true;
    }
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (TakesValue(arg)) {
      if (i + 1 == argc) {
        std::cerr << "gradsync-worker: " << arg << " needs a value\n";
        return false;
      }
      value = argv[++i];
    }
    if (arg == "--coordinator") {
      flags->coordinator = value;
    } else if (arg == "--devices") {
      flags->devices = value;
    } else if (arg == "--address") {
      flags->address = value;
    } else if (arg == "--host") {
      flags->host = value;
    } else if (arg == "--tcp-congestion") {
      flags->tcp_congestion = value;
    } else if (arg == "--spin-polls") {
      int polls = 0;
      if (value == "auto") {
        flags->spin_polls = -1;
      } else if (absl::SimpleAtoi(value, &polls) && polls >= 0) {
        flags->spin_polls = polls;
      } else {
        std::cerr << "gradsync-worker: --spin-polls '" << value
                  << "' is neither auto nor a count >= 0\n";
        return false;
      }
    } else if (arg == "--collective-timeout-s" ||
               arg == "--rendezvous-timeout-s") {
      int64_t s = 0;
      if (!absl::SimpleAtoi(value, &s) || s <= 0) {
        std::cerr << "gradsync-worker: " << arg << " '" << value
                  << "' is not a positive number of seconds\n";
        return false;
      }
      (arg == "--collective-timeout-s" ? flags->collective_timeout_s
                                       : flags->rendezvous_timeout_s) = s;
    } else {
      std::cerr << "gradsync-worker: unknown argument '" << argv[i] << "'\n";
      return false;
    }
  }
  if (flags->address.empty()) {
    std::cerr << "gradsync-worker: --address is empty\n";
    return false;
  }
  if (absl::Status s = gradsync::CheckCongestionControl(flags->tcp_congestion);
      !s.ok()) {
    std::cerr << "gradsync-worker: --tcp-congestion: " << s.message() << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::cerr << kUsage;
    return 2;
  }
  if (flags.help) {
    std::cout << kUsage;
    return 0;
  }
  if (flags.coordinator.empty()) {
    const char* env = std::getenv("GRADSYNC_COORDINATOR");
    flags.coordinator =
        env != nullptr && *env != '\0' ? env : kDefaultCoordinator;
  }
  if (flags.host.empty()) flags.host = HostName();
  absl::StatusOr<std::vector<gradsync::Device>> devices =
      gradsync::ParseDevices(flags.devices);
  if (!devices.ok()) {
    std::cerr << "gradsync-worker: " << devices.status().message() << "\n";
    return 2;
  }

  // Block the signals before any thread starts (the CUDA driver's, when the
  // device check below initialises it; gRPC's), so that they inherit the
  // mask and only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  for (const gradsync::Device& d : *devices) {
    if (d.kind() == "cpu") continue;
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
    // Refuse at start what no job could use, instead of failing each job.
    if (absl::Status s = gradsync::gpu::RequireCudaDevice(
            d.index(), absl::StrCat("--devices ", flags.devices));
        !s.ok()) {
      std::cerr << "gradsync-worker: " << s.message() << "\n";
      return 2;
    }
#else
    std::cerr << "gradsync-worker: --devices " << flags.devices
              << ": this build has no CUDA kernels (CUDA was not found when "
                 "it was built); use cpu or cpu:N\n";
    return 2;
#endif
  }

  // One lock keeps lines from interleaving; owned here, shared by copies.
  auto log_mu = std::make_shared<absl::Mutex>();
  gradsync::LogFn log = [log_mu](absl::string_view line) {
    const std::string text =
        absl::StrCat(absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                                      absl::LocalTimeZone()),
                     " gradsync-worker: ", line, "\n");
    absl::MutexLock lock(log_mu.get());
    std::cerr << text << std::flush;
  };

  // An idle worker must not leave OpenBLAS at "all cores"; jobs set their
  // own count through the policy.
  if (absl::Status s =
          gradsync::SetBlasThreads(gradsync::kDefaultBlasThreadsPerRank);
      !s.ok()) {
    log(absl::StrCat("cannot set BLAS threads: ", s.message()));
    return 1;
  }

  std::shared_ptr<gradsync::CoordinatorClient> client =
      gradsync::NewGrpcCoordinatorClient(
          gradsync::NewCoordinatorChannel(flags.coordinator),
          flags.coordinator);

  gradsync::BlasThreadPolicy blas;
  gradsync::JobRunnerConfig runner;
  runner.coordinator = flags.coordinator;
  runner.listen_host = flags.address;
  runner.host = flags.host;
  runner.collective_timeout = absl::Seconds(flags.collective_timeout_s);
  runner.rendezvous_timeout = absl::Seconds(flags.rendezvous_timeout_s);
  runner.tcp_congestion_control = flags.tcp_congestion;
  if (flags.spin_polls >= 0) runner.spin_polls = flags.spin_polls;
  runner.blas = &blas;
  runner.log = log;

  gradsync::AgentConfig config;
  config.coordinator = flags.coordinator;
  config.host = flags.host;
  config.address = flags.address;
  config.devices = *devices;
  config.pid = static_cast<int>(getpid());
  config.log = log;
  log(absl::StrCat("starting: coordinator ", flags.coordinator, ", devices ",
                   gradsync::FormatDevices(*devices), ", address ",
                   flags.address, ", host ", flags.host));
  {
    gradsync::Agent agent(config, client,
                          gradsync::JobRunnerLauncher(runner, client));
    agent.Start();
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    log(absl::StrCat("got ", strsignal(signal_number),
                     ", cancelling running jobs and shutting down"));
    agent.Stop(absl::CancelledError(
        absl::StrCat("worker on host ", flags.host, " is shutting down (",
                     strsignal(signal_number), ")")));
  }
  log("stopped");
  return 0;
}
