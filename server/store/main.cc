// gradsync-store: runs a rendezvous store server until SIGINT or SIGTERM, so
// that processes on several hosts (`gradsync bench` ranks, workers without a
// coordinator) can find each other through it.
//
//   gradsync-store --listen 0.0.0.0:29500
//
// The first line on stdout is the address actually bound (host:port), for
// scripts that start it on port 0. Exits 0 after a signal, 1 if it cannot
// listen, 2 on a bad command line. --version prints the version and the
// wire version.
#include <signal.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "observability/health_server.h"
#include "security/tls.h"
#include "server/store/store_server.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:29500";
  gradsync::TlsOptions tls;
  std::string health_listen;
  bool help = false;
  bool version = false;
};

std::vector<gradsync::FlagSpec> FlagTable(Flags* flags) {
  std::vector<gradsync::FlagSpec> table = {gradsync::StringFlag(
      "listen", "HOST:PORT",
      "address to listen on (default 127.0.0.1:29500; use "
      "0.0.0.0:29500 to accept other hosts, port 0 for any free port)",
      &flags->listen)};
  gradsync::AddTlsFlags(&flags->tls, &table);
  table.push_back(gradsync::HealthListenFlag(&flags->health_listen));
  table.push_back(gradsync::HelpFlag(&flags->help));
  table.push_back(gradsync::VersionFlag(&flags->version));
  return table;
}

std::string Usage() {
  Flags unused;
  return absl::StrCat(
      "usage: gradsync-store [flags]\n\n"
      "Runs the gradsync rendezvous store until SIGINT or SIGTERM and prints\n"
      "the bound address on the first line of stdout.\n\n",
      gradsync::FlagsHelp(FlagTable(&unused), gradsync::TerminalWidth()));
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  absl::StatusOr<std::vector<std::string>> positional =
      gradsync::ParseFlags(argc, argv, FlagTable(&flags));
  if (positional.ok() && !positional->empty()) {
    positional = absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", (*positional)[0], "'"));
  }
  if (!positional.ok()) {
    std::cerr << "gradsync-store: " << positional.status().message() << "\n\n"
              << Usage();
    return 2;
  }
  if (flags.help) {
    std::cout << Usage();
    return 0;
  }
  if (flags.version) {
    std::cout << gradsync::VersionLine("gradsync-store") << "\n";
    return 0;
  }
  const std::string& listen = flags.listen;
  gradsync::StoreServerOptions options;
  absl::StatusOr<gradsync::GrpcSecurity> security =
      gradsync::SecurityFromOptions(flags.tls, gradsync::TlsRole::kDaemon);
  if (!security.ok()) {
    std::cerr << "gradsync-store: " << security.status().message() << "\n";
    return 2;
  }
  // Said after the address, which scripts read as the first line.
  const std::string security_line =
      gradsync::SecurityLine(*security, flags.tls);
  options.security = *std::move(security);

  // Block the signals before gRPC starts its threads, so that they inherit
  // the mask and only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<gradsync::StoreServer>> server =
      gradsync::StoreServer::Start(listen, options);
  if (!server.ok()) {
    std::cerr << "gradsync-store: " << server.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<gradsync::HealthServer>> health =
      gradsync::ServeDaemonHealth(flags.health_listen, "gradsync-store");
  if (!health.ok()) {
    std::cerr << "gradsync-store: " << health.status().message() << "\n";
    (*server)->Shutdown();
    return 1;
  }
  if (*health != nullptr) (*health)->SetReady(true);  // needs no one else
  std::cout << (*server)->address() << std::endl;
  std::cerr << "gradsync-store: " << security_line << "\n"
            << "gradsync-store: serving on " << (*server)->address()
            << "; stop with Ctrl-C or SIGTERM\n";

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "gradsync-store: got " << strsignal(signal_number)
            << ", shutting down\n";
  if (*health != nullptr) (*health)->Shutdown();
  (*server)->Shutdown();
  return 0;
}
