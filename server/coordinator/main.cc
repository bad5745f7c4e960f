// gradsync-coordinator: runs the coordinator (worker and parameter-server
// registries, job table, rendezvous store, metrics) until SIGINT or SIGTERM.
//
//   gradsync-coordinator --listen 127.0.0.1:29400 --lease-ms 5000
//                        --heartbeat-ms 500
//
// Prints "gradsync-coordinator listening on <host:port>" on stdout once it
// serves (port 0 picks a free port), then one line per event (workers
// registered or lost, job state changes) on stderr. Exits 0 after a
// signal, 1 if it cannot start, 2 on a bad command line.
#include <signal.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/coordinator/coordinator_server.h"

namespace {

constexpr char kUsage[] =
    "usage: gradsync-coordinator [--listen HOST:PORT] [--lease-ms N]\n"
    "                            [--heartbeat-ms N] [--link-gbps B]\n"
    "                            [--link-alpha-us A]\n"
    "\n"
    "Runs the gradsync coordinator until SIGINT or SIGTERM.\n"
    "\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:29400;\n"
    "                      0.0.0.0:29400 accepts other hosts, port 0 picks\n"
    "                      a free port)\n"
    "  --lease-ms N        a worker or parameter server silent for this\n"
    "                      long is lost and its jobs fail (default 5000)\n"
    "  --heartbeat-ms N    how often workers and parameter servers\n"
    "                      heartbeat (default 500; must be below\n"
    "                      --lease-ms)\n"
    "  --link-gbps B       each host's link, GB/s of payload, for the\n"
    "                      alpha-beta model behind --mode auto's decisions\n"
    "                      (default: unknown)\n"
    "  --link-alpha-us A   the model's latency per message (default 0)\n";

struct Flags {
  std::string listen = "127.0.0.1:29400";
  int64_t lease_ms = 5000;
  int64_t heartbeat_ms = 500;
  double link_gbps = 0;
  double link_alpha_us = 0;
  bool help = false;
};

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
    } else if (arg == "--listen" || arg == "--lease-ms" ||
               arg == "--heartbeat-ms" || arg == "--link-gbps" ||
               arg == "--link-alpha-us") {
      if (i + 1 == argc) {
        std::cerr << "gradsync-coordinator: " << arg << " needs a value\n";
        return false;
      }
      value = argv[++i];
    }
    if (arg == "--listen") {
      flags->listen = value;
    } else if (arg == "--lease-ms" || arg == "--heartbeat-ms") {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(value, &ms) || ms <= 0) {
        std::cerr << "gradsync-coordinator: " << arg << " '" << value
                  << "' is not a positive number of milliseconds\n";
        return false;
      }
      (arg == "--lease-ms" ? flags->lease_ms : flags->heartbeat_ms) = ms;
    } else if (arg == "--link-gbps" || arg == "--link-alpha-us") {
      double number = 0;
      if (!absl::SimpleAtod(value, &number) || !(number >= 0) ||
          number > 1e6) {
        std::cerr << "gradsync-coordinator: " << arg << " '" << value
                  << "' is not a number >= 0\n";
        return false;
      }
      (arg == "--link-gbps" ? flags->link_gbps : flags->link_alpha_us) =
          number;
    } else {
      std::cerr << "gradsync-coordinator: unknown argument '" << argv[i]
                << "'\n";
      return false;
    }
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

  // Block the signals before gRPC starts its threads, so that they inherit
  // the mask and only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  gradsync::CoordinatorConfig config;
  config.lease = absl::Milliseconds(flags.lease_ms);
  config.heartbeat_interval = absl::Milliseconds(flags.heartbeat_ms);
  config.lease_check_interval =
      std::min(absl::Milliseconds(250), config.lease / 4);
  config.link_bandwidth_Bps = flags.link_gbps * 1e9;
  config.link_alpha_s = flags.link_alpha_us * 1e-6;
  config.event_log = [](absl::string_view line) {
    std::cerr << absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                                  absl::LocalTimeZone())
              << " gradsync-coordinator: " << line << std::endl;
  };
  absl::StatusOr<std::unique_ptr<gradsync::CoordinatorServer>> server =
      gradsync::CoordinatorServer::Start(flags.listen, std::move(config));
  if (!server.ok()) {
    std::cerr << "gradsync-coordinator: " << server.status().message() << "\n";
    return 1;
  }
  std::cout << "gradsync-coordinator listening on " << (*server)->address()
            << std::endl;

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "gradsync-coordinator: got " << strsignal(signal_number)
            << ", shutting down\n";
  (*server)->Shutdown();
  return 0;
}
