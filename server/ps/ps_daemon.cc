#include "server/ps/ps_daemon.h"

#include <signal.h>

#include <cstring>
#include <iostream>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

// Reads "--name VALUE" or "--name=VALUE" at argv[*i] into *value.
// Returns false when argv[*i] is another argument.
absl::StatusOr<bool> FlagValue(int argc, char** argv, int* i,
                               absl::string_view name, std::string* value) {
  const absl::string_view arg = argv[*i];
  if (arg == name) {
    if (*i + 1 == argc) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " needs a HOST:PORT value"));
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
         "\n"
         "Runs a gradsync parameter server until SIGINT or SIGTERM and prints\n"
         "the bound address on the first line of stdout.\n"
         "\n"
         "  --listen HOST:PORT       address to serve on (default\n"
         "                           127.0.0.1:29600; 0.0.0.0:29600 accepts\n"
         "                           other hosts, port 0 picks a free one)\n"
         "  --coordinator HOST:PORT  coordinator to announce this server to\n";
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
    return absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", arg, "'"));
  }
  return config;
}

int RunPsDaemon(const PsDaemonConfig& config, const PsDaemonHooks& hooks) {
  // Blocked before gRPC starts its threads, so that they inherit the mask
  // and only sigwait below receives the signals.
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
  if (!config.coordinator.empty() && hooks.register_with_coordinator) {
    const absl::Status registered =
        hooks.register_with_coordinator(config, address);
    if (!registered.ok()) {
      std::cerr << "gradsync-ps: could not register with coordinator "
                << config.coordinator << ": " << registered.message() << "\n";
      return 1;
    }
  }
  std::cout << address << std::endl;
  std::cerr << "gradsync-ps: serving on " << address;
  if (!config.coordinator.empty()) {
    std::cerr << " for coordinator " << config.coordinator;
  }
  std::cerr << "; stop with Ctrl-C or SIGTERM\n";

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "gradsync-ps: got " << strsignal(signal_number)
            << ", shutting down\n";
  (*server)->Shutdown();
  return 0;
}

}  // namespace gradsync
