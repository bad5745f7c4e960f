#include "cli/bench/bench_command.h"

#include <iostream>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "cli/bench/backend.h"
#include "cli/bench/bench_options.h"
#include "cli/bench/bench_rank.h"
#include "cli/bench/launcher.h"
#include "cli/bench/ps_cluster.h"
#include "cli/bench/ps_options.h"
#include "server/ps/ps_transport.h"

namespace gradsync {
namespace bench {

int RunBenchCommand(const std::vector<std::string>& args) {
  // The launcher hosts --backend ps's servers and every rank pushes and
  // pulls tensors: without this, each megabyte gRPC receives is a fresh
  // mmap and its page faults (4x the PS's time at 64 MiB on 2 cores).
  TuneMallocForTensorTraffic();
  absl::StatusOr<BenchOptions> options = ParseBenchArgs(args);
  if (!options.ok()) {
    std::cerr << "gradsync bench: " << options.status().message()
              << "\n(gradsync bench --help lists the flags)\n";
    return kExitError;
  }
  if (options->help) {
    std::cout << BenchUsage();
    return kExitOk;
  }
  if (options->member()) return BenchRankMain(*options);

  // Launcher: refuse what no rank could run before starting any.
  if (absl::Status status = CheckBackendAvailable(*options); !status.ok()) {
    std::cerr << "gradsync bench: " << status.message() << "\n";
    return kExitError;
  }
  LaunchSpec spec;
  spec.args = {"bench"};
  for (const std::string& arg :
       StripFlag(StripFlag(args, "--ranks"), "--job")) {
    spec.args.push_back(arg);
  }
  // --backend ps without --ps-addresses: K servers in this process, one
  // shard each, alive until every rank is done.
  std::vector<std::unique_ptr<PsServer>> ps_servers;
  if (options->backend == Backend::kPs && options->ps_addresses.empty()) {
    absl::StatusOr<std::vector<std::unique_ptr<PsServer>>> started =
        StartLocalPsServers(PsShardCount(*options),
                            options->congestion_control.value_or("auto"));
    if (!started.ok()) {
      std::cerr << "gradsync bench: " << started.status().message() << "\n";
      return kExitError;
    }
    ps_servers = *std::move(started);
    spec.args.push_back("--ps-addresses");
    spec.args.push_back(absl::StrJoin(PsServerAddresses(ps_servers), ","));
  }
  spec.ranks = options->ranks;
  spec.job = options->job;
  spec.deadline = options->deadline;
  absl::StatusOr<int> exit_status = RunLocalRanks(spec, kExitWrongResults);
  if (!exit_status.ok()) {
    std::cerr << "gradsync bench: " << exit_status.status().message() << "\n";
    return kExitError;
  }
  return *exit_status;
}

}  // namespace bench
}  // namespace gradsync
