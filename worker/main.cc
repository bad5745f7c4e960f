// gradsync-worker: the long-running worker daemon (worker_daemon.h).
//
//   gradsync-worker --coordinator 127.0.0.1:29400 --devices cpu:4
//                   --address 127.0.0.1
//
// Exits 0 after SIGINT or SIGTERM, 1 if it cannot start, 2 on a bad command
// line.
#include <iostream>

#include "common/flags.h"
#include "server/ps/transport/ps_transport.h"
#include "worker/daemon/worker_daemon.h"

int main(int argc, char** argv) {
  // Pulls from the parameter servers arrive in gRPC buffers of up to a
  // chunk each; keep them in the heap rather than mmap them per message.
  gradsync::TuneMallocForTensorTraffic();
  absl::StatusOr<gradsync::WorkerDaemonConfig> config =
      gradsync::ParseWorkerDaemonFlags(argc, argv);
  if (!config.ok()) {
    std::cerr << "gradsync-worker: " << config.status().message() << "\n\n"
              << gradsync::WorkerDaemonUsage(gradsync::TerminalWidth());
    return 2;
  }
  if (config->help) {
    std::cout << gradsync::WorkerDaemonUsage(gradsync::TerminalWidth());
    return 0;
  }
  if (config->version) {
    std::cout << gradsync::VersionLine("gradsync-worker") << "\n";
    return 0;
  }
  return gradsync::RunWorkerDaemon(*config);
}
