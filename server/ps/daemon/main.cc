// gradsync-ps: a parameter server daemon (see ps_daemon.h).
#include <iostream>

#include "common/flags.h"
#include "server/ps/daemon/ps_daemon.h"
#include "server/ps/transport/ps_transport.h"

int main(int argc, char** argv) {
  gradsync::TuneMallocForTensorTraffic();
  bool help = false;
  absl::StatusOr<gradsync::PsDaemonConfig> config =
      gradsync::ParsePsDaemonFlags(argc, argv, &help);
  if (!config.ok()) {
    std::cerr << "gradsync-ps: " << config.status().message() << "\n\n"
              << gradsync::PsDaemonUsage(gradsync::TerminalWidth());
    return 2;
  }
  if (help) {
    std::cout << gradsync::PsDaemonUsage(gradsync::TerminalWidth());
    return 0;
  }
  if (config->version) {
    std::cout << gradsync::VersionLine("gradsync-ps") << "\n";
    return 0;
  }
  return gradsync::RunPsDaemon(*config);
}
