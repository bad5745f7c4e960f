#include "server/ps/daemon/ps_daemon.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/advertised_address.h"
#include "common/flags.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "observability/health_server.h"
#include "security/grpc_log_tap.h"
#include "security/secret.h"
#include "server/ps/daemon/ps_registration.h"

namespace gradsync {
namespace {

// The flag table, writing into `config` and `help`.
std::vector<FlagSpec> PsFlags(PsDaemonConfig* config, bool* help) {
  std::vector<FlagSpec> flags = {
      StringFlag("listen", "HOST:PORT",
                 "address to serve on (default 127.0.0.1:29600; "
                 "0.0.0.0:29600 accepts other hosts, port 0 picks a free "
                 "one)",
                 &config->listen),
      StringFlag("advertise", "HOST[:PORT]",
                 "the address workers are told to connect to (default: the "
                 "--listen address, or this host's name for 0.0.0.0); set "
                 "it to the node's cluster address when its name does not "
                 "resolve to that on every host",
                 &config->advertise),
      StringFlag("join-token-file", "FILE",
                 "the cluster's join token, which a coordinator started "
                 "with --join-token-file wants before it lets a server "
                 "register (a copy of its file)",
                 &config->join_token_file),
      StringFlag("host", "NAME",
                 "host name to register, for placement and explain (default: "
                 "this machine's)",
                 &config->host),
      StringFlag("coordinator", "HOST:PORT",
                 "coordinator to register with (before the address is "
                 "printed; exit 1 if it stays unreachable for 30 s); "
                 "heartbeats then report the shards and release those of "
                 "jobs that ended",
                 &config->coordinator),
      IntFlag("compute-threads",
              "threads that sum a synchronous step's gradients and apply "
              "its update (default 0: one per core)",
              0, &config->server.compute_threads),
      FlagSpec("tcp-congestion", "NAME",
               "congestion control of the workers' connections: auto (reno "
               "for workers on this host, the system's for others), default "
               "(the system's), or an algorithm the kernel allows (default "
               "auto)",
               [config](absl::string_view value) {
                 config->server.transport.congestion_control =
                     std::string(value);
                 absl::Status s = CheckCongestionControl(
                     config->server.transport.congestion_control);
                 if (s.ok()) return s;
                 return absl::InvalidArgumentError(
                     absl::StrCat("--tcp-congestion: ", s.message()));
               }),
  };
  flags.push_back(IntFlag(
      "tensor-port",
      "the port of the tensor plane, which carries the workers' step "
      "tensors over plain TCP after an HMAC handshake proving the job's "
      "token (also beside TLS; docs/security.md): 0 any free one (the "
      "default), -1 none, so that workers use the gRPC streams",
      -1, &config->server.tensor_port));
  AddTlsFlags(&config->tls, &flags);
  flags.push_back(PsPlaintextFlag(&config->ps_plaintext));
  flags.push_back(MetricsListenFlag(&config->server.metrics_listen));
  flags.push_back(HealthListenFlag(&config->health_listen));
  flags.push_back(HelpFlag(help));
  flags.push_back(VersionFlag(&config->version));
  return flags;
}

}  // namespace

std::string PsDaemonUsage(int width) {
  PsDaemonConfig unused;
  bool help = false;
  return absl::StrCat(
      "usage: gradsync-ps [flags]\n\n"
      "Runs a gradsync parameter server until SIGINT or SIGTERM and prints\n"
      "the bound address on the first line of stdout.\n\n",
      FlagsHelp(PsFlags(&unused, &help), width));
}

absl::StatusOr<PsDaemonConfig> ParsePsDaemonFlags(int argc, char** argv,
                                                  bool* help) {
  PsDaemonConfig config;
  *help = false;
  ASSIGN_OR_RETURN(const std::vector<std::string> positional,
                   ParseFlags(argc, argv, PsFlags(&config, help)));
  if (!positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", positional[0], "'"));
  }
  return config;
}

std::string AdvertisedPsAddress(const std::string& listen_host, int port,
                                const std::string& coordinator) {
  if (listen_host == "0.0.0.0" || listen_host == "::" ||
      listen_host == "[::]" || listen_host == "*" || listen_host.empty()) {
    // The interface that reaches the coordinator is the one the workers
    // reach too; a host name may not resolve to it everywhere (issue 44,
    // trap 1).
    if (!coordinator.empty()) {
      absl::StatusOr<std::string> local = LocalAddressToward(coordinator);
      if (local.ok()) {
        return local->find(':') == std::string::npos
                   ? absl::StrCat(*local, ":", port)
                   : absl::StrCat("[", *local, "]:", port);
      }
    }
    return absl::StrCat(HostName(), ":", port);
  }
  return absl::StrCat(listen_host, ":", port);
}

std::string RegisteredPsAddress(const std::string& advertise,
                                const std::string& listen_host, int port,
                                const std::string& coordinator) {
  if (advertise.empty()) {
    return AdvertisedPsAddress(listen_host, port, coordinator);
  }
  const size_t close = advertise.rfind(']');
  const size_t colon = advertise.rfind(':');
  const bool bracketed = !advertise.empty() && advertise[0] == '[';
  const bool has_port =
      bracketed ? close != std::string::npos && colon == close + 1
                : colon != std::string::npos &&
                      advertise.find(':') == colon;  // not a bare IPv6
  return has_port ? advertise : absl::StrCat(advertise, ":", port);
}

int RunPsDaemon(const PsDaemonConfig& config, const PsDaemonHooks& hooks) {
  // Blocked before gRPC starts its threads, so that they inherit the mask
  // and only the waiter below receives the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<GrpcSecurity> security =
      SecurityFromOptions(config.tls, TlsRole::kDaemon);
  if (!security.ok()) {
    std::cerr << "gradsync-ps: " << security.status().message() << "\n";
    return 2;
  }
  // Said after the address, which scripts read as the first line.
  std::string security_lines =
      absl::StrCat("gradsync-ps: ", SecurityLine(*security, config.tls), "\n");
  if (config.ps_plaintext && security->tls()) {
    absl::StrAppend(&security_lines, "gradsync-ps: ", kPsPlaintextWarning,
                    "\n");
  }
  // With a coordinator, only the ranks it sent (with their job's token)
  // may touch a job's shards.
  PsServerOptions options = config.server;
  if (!config.ps_plaintext) options.transport.security = *security;
  options.require_tokens = !config.coordinator.empty();
  // gRPC's log function from here on, so that a refused TLS handshake is
  // named with its peer (security/grpc_log_tap.h); destroyed after the
  // server. A process that has one already (a test running the daemon in
  // it) lends it no second: the refusals of non-TLS clients are still said.
  absl::StatusOr<std::unique_ptr<GrpcLogTap>> grpc_log = GrpcLogTap::Install();
  options.handshakes.log = [](absl::string_view line) {
    std::cerr << absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                                  absl::LocalTimeZone())
              << " gradsync-ps: " << line << std::endl;
  };
  if (grpc_log.ok()) options.handshakes.tap = grpc_log->get();
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start(config.listen, options);
  if (!server.ok()) {
    std::cerr << "gradsync-ps: " << server.status().message() << "\n";
    return 1;
  }
  const std::string address = (*server)->address();
  // Live while registering already; ready once registered.
  absl::StatusOr<std::unique_ptr<HealthServer>> health =
      ServeDaemonHealth(config.health_listen, "gradsync-ps");
  if (!health.ok()) {
    std::cerr << "gradsync-ps: " << health.status().message() << "\n";
    (*server)->Shutdown();
    return 1;
  }
  HealthServer* const probe = health->get();

  std::unique_ptr<PsRegistration> registration;
  if (!config.coordinator.empty()) {
    PsRegistrationConfig reg;
    reg.coordinator = config.coordinator;
    reg.host = config.host.empty() ? HostName() : config.host;
    reg.address = RegisteredPsAddress(config.advertise,
                                      address.substr(0, address.rfind(':')),
                                      (*server)->port(), config.coordinator);
    reg.tensor_port = (*server)->tensor_port();
    reg.pid = static_cast<int>(getpid());
    if (!config.join_token_file.empty()) {
      absl::StatusOr<std::string> token = ReadTokenFile(config.join_token_file);
      if (!token.ok()) {
        std::cerr << "gradsync-ps: --join-token-file: "
                  << token.status().message() << "\n";
        (*server)->Shutdown();
        return 2;
      }
      reg.join_token = *std::move(token);
    }
    reg.register_timeout = config.register_timeout;
    if (probe != nullptr) {
      reg.on_contact = [probe](bool in_touch) { probe->SetReady(in_touch); };
    }
    std::shared_ptr<CoordinatorClient> client =
        hooks.connect_coordinator
            ? hooks.connect_coordinator(config.coordinator)
            : ConnectCoordinator(config.coordinator, *security);
    registration = std::make_unique<PsRegistration>(std::move(reg), client,
                                                    (*server)->service());
  }

  // The waiter takes SIGINT/SIGTERM at any time, also while registering.
  int signal_number = 0;
  absl::Notification signalled;
  std::thread waiter([&]() {
    sigwait(&signals, &signal_number);
    signalled.Notify();
    if (registration != nullptr) registration->Stop();
  });
  auto shut_down = [&](int code) {
    // Wakes the waiter if no signal came (it is blocked everywhere, so it
    // stays pending for the waiter's sigwait).
    if (!signalled.HasBeenNotified())
      pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    if (registration != nullptr) registration->Stop();
    if (probe != nullptr) probe->Shutdown();
    (*server)->Shutdown();
    return code;
  };

  if (registration != nullptr) {
    const absl::Status registered = registration->Register();
    if (!registered.ok()) {
      if (signalled.HasBeenNotified()) {
        std::cerr << "gradsync-ps: got " << strsignal(signal_number)
                  << " while registering, shutting down\n";
        return shut_down(0);
      }
      std::cerr << security_lines << "gradsync-ps: " << registered.message()
                << TlsConnectHint(*security, registered) << "\n";
      return shut_down(1);
    }
    registration->StartHeartbeats();
  } else if (probe != nullptr) {
    probe->SetReady(true);  // no coordinator to be in touch with
  }
  std::cout << address << std::endl;
  std::cerr << security_lines << "gradsync-ps: serving on " << address;
  if (!config.coordinator.empty()) {
    std::cerr << " for coordinator " << config.coordinator;
  }
  std::cerr << "; stop with Ctrl-C or SIGTERM\n";
  if (!(*server)->metrics_address().empty()) {
    std::cerr << "gradsync-ps: metrics on http://"
              << (*server)->metrics_address() << "/metrics\n";
  }
  if (probe != nullptr) {
    std::cerr << "gradsync-ps: health checks on " << probe->address() << "\n";
  }
  if ((*server)->tensor_port() > 0) {
    std::cerr << "gradsync-ps: tensor plane (plain TCP) on port "
              << (*server)->tensor_port() << "\n";
  }

  signalled.WaitForNotification();
  std::cerr << "gradsync-ps: got " << strsignal(signal_number)
            << ", shutting down\n";
  if (registration != nullptr) {
    registration->Deregister(
        absl::StrCat("shutting down (", strsignal(signal_number), ")"));
  }
  return shut_down(0);
}

}  // namespace gradsync
