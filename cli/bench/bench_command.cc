#include "cli/bench/bench_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/bench/backend.h"
#include "cli/bench/bench_options.h"
#include "cli/bench/bench_rank.h"
#include "cli/bench/launcher.h"
#include "cli/bench/ps_cluster.h"
#include "cli/bench/ps_options.h"
#include "cli/framework/plot_script.h"
#include "server/ps/ps_transport.h"

namespace gradsync {
namespace cli {
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
                            options->congestion_control.value_or("auto"),
                            /*tensor_plane=*/true);
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
  // --plot: rank 0 writes its JSON rows into a file beside the PNG, which
  // scripts/bench_plot.py draws once every rank is done.
  std::string results;
  if (!options->plot.empty()) {
    results = absl::StrCat(options->plot, ".XXXXXX");
    const int fd = mkstemp(results.data());
    if (fd < 0) {
      std::cerr << "gradsync bench: cannot write " << results << "\n";
      return kExitError;
    }
    close(fd);
    spec.args.push_back("--results-file");
    spec.args.push_back(results);
  }
  absl::StatusOr<int> exit_status = RunLocalRanks(spec, kExitWrongResults);
  if (!exit_status.ok()) {
    if (!results.empty()) unlink(results.c_str());
    std::cerr << "gradsync bench: " << exit_status.status().message() << "\n";
    return kExitError;
  }
  if (!results.empty()) {
    std::vector<std::string> plot_args = {options->plot, results};
    if (options->link_gbps > 0) {
      plot_args.push_back("--link-gbps");
      plot_args.push_back(absl::StrCat(options->link_gbps));
    }
    std::vector<char> self(4096, '\0');
    const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    const absl::Status plotted = RunPlotScript(
        n > 0 ? std::string(self.data(), static_cast<size_t>(n)) : "",
        "bench_plot.py", plot_args);
    unlink(results.c_str());
    if (!plotted.ok()) {
      std::cerr << "gradsync bench: " << plotted.message() << "\n";
      return kExitError;
    }
    std::cerr << "gradsync bench: wrote " << options->plot << "\n";
  }
  return *exit_status;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
