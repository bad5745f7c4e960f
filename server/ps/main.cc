// gradsync-ps: a parameter server daemon (see ps_daemon.h).
#include <iostream>

#include "server/ps/ps_daemon.h"
#include "server/ps/ps_transport.h"

int main(int argc, char** argv) {
  gradsync::TuneMallocForTensorTraffic();
  bool help = false;
  absl::StatusOr<gradsync::PsDaemonConfig> config =
      gradsync::ParsePsDaemonFlags(argc, argv, &help);
  if (!config.ok()) {
    std::cerr << "gradsync-ps: " << config.status().message() << "\n"
              << gradsync::PsDaemonUsage();
    return 2;
  }
  if (help) {
    std::cout << gradsync::PsDaemonUsage();
    return 0;
  }
  return gradsync::RunPsDaemon(*config);
}
