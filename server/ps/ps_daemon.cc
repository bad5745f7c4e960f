#include "server/ps/ps_daemon.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/host.h"
#include "common/tcp_congestion.h"
#include "server/ps/ps_registration.h"

namespace gradsync {
namespace {

// Reads "--name VALUE" or "--name=VALUE" at argv[*i] into *value.
// Returns false when argv[*i] is another argument.
[[nodiscard]] absl::StatusOr<bool> FlagValue(
    int argc, char** argv, int* i, absl::string_view name, std::string* value,
    absl::string_view value_name = "HOST:PORT") {
  const absl::string_view arg = argv[*i];
  if (arg == name) {
    if (*i + 1 == argc) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " needs a ", value_name, " value"));
    }
    *value = argv[++*i];
    return true;
  }
  if (absl::StartsWith(arg, absl::StrCat(name, "="))) {
    *value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  return false;
}

}  // namespace

const char* PsDaemonUsage() {
  return "usage: gradsync-ps [--listen HOST:PORT] [--coordinator HOST:PORT]\n"
         "                   [--compute-threads N] [--tcp-congestion NAME]\n"
         "\n"
         "Runs a gradsync parameter server until SIGINT or SIGTERM and prints\n"
         "the bound address on the first line of stdout.\n"
         "\n"
         "  --listen HOST:PORT       address to serve on (default\n"
         "                           127.0.0.1:29600; 0.0.0.0:29600 accepts\n"
         "                           other hosts, port 0 picks a free one)\n"
         "  --coordinator HOST:PORT  coordinator to register with (before the\n"
         "                           address is printed; exit 1 if it stays\n"
         "                           unreachable for 30 s); heartbeats then\n"
         "                           report the shards and release those of\n"
         "                           jobs that ended\n"
         "  --compute-threads N      threads that sum a synchronous step's\n"
         "                           gradients and apply its update\n"
         "                           (default 0: one per core)\n"
         "  --tcp-congestion NAME    congestion control of the workers'\n"
         "                           connections: auto (reno for workers on\n"
         "                           this host, the system's for others),\n"
         "                           default (the system's), or an algorithm\n"
         "                           the kernel allows (default auto)\n";
}

absl::StatusOr<PsDaemonConfig> ParsePsDaemonFlags(int argc, char** argv,
                                                  bool* help) {
  PsDaemonConfig config;
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return config;
    }
    absl::StatusOr<bool> listen =
        FlagValue(argc, argv, &i, "--listen", &config.listen);
    if (!listen.ok()) return listen.status();
    if (*listen) continue;
    absl::StatusOr<bool> coordinator =
        FlagValue(argc, argv, &i, "--coordinator", &config.coordinator);
    if (!coordinator.ok()) return coordinator.status();
    if (*coordinator) continue;
    absl::StatusOr<bool> congestion =
        FlagValue(argc, argv, &i, "--tcp-congestion",
                  &config.server.transport.congestion_control, "NAME");
    if (!congestion.ok()) return congestion.status();
    if (*congestion) {
      if (absl::Status s = CheckCongestionControl(
              config.server.transport.congestion_control);
          !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--tcp-congestion: ", s.message()));
      }
      continue;
    }
    std::string threads;
    absl::StatusOr<bool> compute =
        FlagValue(argc, argv, &i, "--compute-threads", &threads, "N");
    if (!compute.ok()) return compute.status();
    if (*compute) {
      if (!absl::SimpleAtoi(threads, &config.server.compute_threads) ||
          config.server.compute_threads < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--compute-threads must be a whole number >= 0 (0: "
                         "one per core), not '",
                         threads, "'"));
      }
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", arg, "'"));
  }
  return config;
}

std::string AdvertisedPsAddress(const std::string& listen_host, int port) {
  if (listen_host == "0.0.0.0" || listen_host == "::" ||
      listen_host == "[::]" || listen_host == "*" || listen_host.empty()) {
    return absl::StrCat(HostName(), ":", port);
  }
  return absl::StrCat(listen_host, ":", port);
}

int RunPsDaemon(const PsDaemonConfig& config, const PsDaemonHooks& hooks) {
  // Blocked before gRPC starts its threads, so that they inherit the mask
  // and only the waiter below receives the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start(config.listen, config.server);
  if (!server.ok()) {
    std::cerr << "gradsync-ps: " << server.status().message() << "\n";
    return 1;
  }
  const std::string address = (*server)->address();

  std::unique_ptr<PsRegistration> registration;
  if (!config.coordinator.empty()) {
    PsRegistrationConfig reg;
    reg.coordinator = config.coordinator;
    reg.host = HostName();
    reg.address = AdvertisedPsAddress(address.substr(0, address.rfind(':')),
                                      (*server)->port());
    reg.pid = static_cast<int>(getpid());
    reg.register_timeout = config.register_timeout;
    std::shared_ptr<CoordinatorClient> client =
        hooks.connect_coordinator
            ? hooks.connect_coordinator(config.coordinator)
            : ConnectCoordinator(config.coordinator);
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
      std::cerr << "gradsync-ps: " << registered.message() << "\n";
      return shut_down(1);
    }
    registration->StartHeartbeats();
  }
  std::cout << address << std::endl;
  std::cerr << "gradsync-ps: serving on " << address;
  if (!config.coordinator.empty()) {
    std::cerr << " for coordinator " << config.coordinator;
  }
  std::cerr << "; stop with Ctrl-C or SIGTERM\n";

  signalled.WaitForNotification();
  std::cerr << "gradsync-ps: got " << strsignal(signal_number)
            << ", shutting down\n";
  return shut_down(0);
}

}  // namespace gradsync
