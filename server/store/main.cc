// gradsync-store: runs a rendezvous store server until SIGINT or SIGTERM, so
// that processes on several hosts (`gradsync bench` ranks, workers without a
// coordinator) can find each other through it.
//
//   gradsync-store --listen 0.0.0.0:29500
//
// The first line on stdout is the address actually bound (host:port), for
// scripts that start it on port 0. Exits 0 after a signal, 1 if it cannot
// listen, 2 on a bad command line.
#include <signal.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "server/store/store_server.h"

namespace {

constexpr char kDefaultListen[] = "127.0.0.1:29500";

constexpr char kUsage[] =
    "usage: gradsync-store [--listen HOST:PORT]\n"
    "\n"
    "Runs the gradsync rendezvous store until SIGINT or SIGTERM and prints\n"
    "the bound address on the first line of stdout.\n"
    "\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:29500;\n"
    "                      use 0.0.0.0:29500 to accept other hosts, port 0\n"
    "                      for any free port)\n";

// Parses argv into `listen`. Returns false (after printing why) on a bad
// command line; sets `help` when usage was asked for.
bool ParseFlags(int argc, char** argv, std::string* listen, bool* help) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    if (arg == "--listen") {
      if (i + 1 == argc) {
        std::cerr << "gradsync-store: --listen needs a HOST:PORT value\n";
        return false;
      }
      *listen = argv[++i];
    } else if (arg.rfind("--listen=", 0) == 0) {
      *listen = arg.substr(std::strlen("--listen="));
    } else {
      std::cerr << "gradsync-store: unknown argument '" << arg << "'\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = kDefaultListen;
  bool help = false;
  if (!ParseFlags(argc, argv, &listen, &help)) {
    std::cerr << kUsage;
    return 2;
  }
  if (help) {
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

  absl::StatusOr<std::unique_ptr<gradsync::StoreServer>> server =
      gradsync::StoreServer::Start(listen);
  if (!server.ok()) {
    std::cerr << "gradsync-store: " << server.status().message() << "\n";
    return 1;
  }
  std::cout << (*server)->address() << std::endl;
  std::cerr << "gradsync-store: serving on " << (*server)->address()
            << "; stop with Ctrl-C or SIGTERM\n";

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "gradsync-store: got " << strsignal(signal_number)
            << ", shutting down\n";
  (*server)->Shutdown();
  return 0;
}
