// The local launcher of `gradsync bench --ranks N`: starts a rendezvous
// store server in this process on 127.0.0.1, re-executes this binary N
// times as ranks (--rank r --world N --store 127.0.0.1:PORT --job ID), and
// waits for them.
//
// Failure handling: if a rank exits with an error or is killed, the others
// are stopped (SIGTERM, then SIGKILL after a grace period) and the error
// names that rank. If the run outlives `deadline`, every rank is stopped
// and the error names the ranks still running. Each rank is also killed
// if the launcher dies (PR_SET_PDEATHSIG), so no orphan keeps a port.
#ifndef GRADSYNC_CLI_BENCH_LAUNCHER_H_
#define GRADSYNC_CLI_BENCH_LAUNCHER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {
namespace cli {
namespace bench {

struct LaunchSpec {
  // The binary to run; /proc/self/exe re-executes this one.
  std::string executable = "/proc/self/exe";
  // Arguments after the binary's name, common to every rank; the launcher
  // appends --rank, --world, --store and --job.
  std::vector<std::string> args;
  int ranks = 2;
  // "NAME=VALUE" entries added to the ranks' environment (the rest is
  // this process's).
  std::vector<std::string> env;
  // Run id prefix; the launcher makes it unique per run.
  std::string job = "bench";
  absl::Duration deadline = absl::Hours(1);
};

// Runs the ranks to completion. Returns the exit status to use when every
// rank exited by itself with 0 or `benign_exit` (the worst of them), or an
// error: UNAVAILABLE if the store could not start, INTERNAL if a rank
// could not be started, ABORTED naming the rank that failed, or
// DEADLINE_EXCEEDED naming the ranks still running at the deadline.
[[nodiscard]] absl::StatusOr<int> RunLocalRanks(const LaunchSpec& spec,
                                                int benign_exit);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_LAUNCHER_H_
