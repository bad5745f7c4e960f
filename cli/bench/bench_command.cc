#include "cli/bench/bench_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <optional>
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
#include "cli/framework/parse_command.h"
#include "cli/framework/plot_script.h"
#include "server/ps/transport/ps_transport.h"

namespace gradsync {
namespace cli {
namespace bench {

namespace {

// The launcher's side of a run: starts the ranks (and --backend ps's
// servers), waits for them, and draws --plot.
int Launch(const std::vector<std::string>& args, const BenchOptions& options,
           const CommandEnv& env) {
  auto fail = [&](const absl::Status& status) {
    return ReportError(env, "bench", options.json, status);
  };
  LaunchSpec spec;
  spec.args = {"bench"};
  for (const std::string& arg :
       StripFlag(StripFlag(args, "--ranks"), "--job")) {
    spec.args.push_back(arg);
  }
  spec.env = {absl::StrCat(kLaunchedVariable, "=1")};
  // --backend ps without --ps-addresses: K servers in this process, one
  // shard each, alive until every rank is done.
  std::vector<std::unique_ptr<PsServer>> ps_servers;
  if (options.backend == Backend::kPs && options.ps_addresses.empty()) {
    absl::StatusOr<std::vector<std::unique_ptr<PsServer>>> started =
        StartLocalPsServers(PsShardCount(options),
                            options.congestion_control.value_or("auto"),
                            /*tensor_plane=*/true);
    if (!started.ok()) return fail(started.status());
    ps_servers = *std::move(started);
    spec.args.push_back("--ps-addresses");
    spec.args.push_back(absl::StrJoin(PsServerAddresses(ps_servers), ","));
  }
  spec.ranks = options.ranks;
  spec.job = options.job;
  spec.deadline = options.deadline;
  // --plot: rank 0 writes its JSON rows into a file beside the PNG, which
  // scripts/bench_plot.py draws once every rank is done.
  std::string results;
  if (!options.plot.empty()) {
    results = absl::StrCat(options.plot, ".XXXXXX");
    const int fd = mkstemp(results.data());
    if (fd < 0) {
      return fail(absl::InternalError(absl::StrCat("cannot write ", results)));
    }
    close(fd);
    spec.args.push_back("--results-file");
    spec.args.push_back(results);
  }
  // Ranks that found wrong elements exit kExitLaunchedRankWrongResults,
  // each having run to the end; rank 0 printed how many.
  absl::StatusOr<int> ranks_exit =
      RunLocalRanks(spec, kExitLaunchedRankWrongResults);
  if (!ranks_exit.ok()) {
    if (!results.empty()) unlink(results.c_str());
    return fail(ranks_exit.status());
  }
  if (!results.empty()) {
    std::vector<std::string> plot_args = {options.plot, results};
    if (options.link_gbps > 0) {
      plot_args.push_back("--link-gbps");
      plot_args.push_back(absl::StrCat(options.link_gbps));
    }
    const absl::Status plotted =
        RunPlotScript(env.self_exe, "bench_plot.py", plot_args);
    unlink(results.c_str());
    if (!plotted.ok()) return fail(plotted);
    *env.err << "gradsync bench: wrote " << options.plot << "\n";
  }
  return *ranks_exit == 0 ? kExitOk : kExitFailure;
}

}  // namespace

int RunBenchCommand(const std::vector<std::string>& args,
                    const CommandEnv& env) {
  BenchParse parse;
  CommandOptions common;
  common.formats.clear();  // -o is nccl-tests' --op; --json is bench's own
  std::vector<std::string> positional;
  if (std::optional<int> done =
          ParseCommand(args, BenchFlags(&parse), "bench", BenchUsage(), env,
                       &common, &positional)) {
    return *done;
  }
  absl::StatusOr<BenchOptions> options =
      FinishBenchArgs(std::move(parse), positional, env.launcher_env);
  if (!options.ok()) {
    return ReportUsageError(env, "bench", args, options.status());
  }
  // Every rank pushes and pulls tensors and the launcher hosts --backend
  // ps's servers: without this, each megabyte gRPC receives is a fresh
  // mmap and its page faults (4x the PS's time at 64 MiB on 2 cores).
  TuneMallocForTensorTraffic();
  // What no rank could run is refused before anything starts (a rank: before
  // it joins): a bad --algo or --transport is a usage error (2); NCCL not
  // built in, no GPU, or a --ps-addresses server that does not answer, a
  // failure (1).
  if (absl::Status status = options->member() ? CheckBackendFlags(*options)
                                              : CheckBackendAvailable(*options);
      !status.ok()) {
    return ReportError(env, "bench", options->json, status);
  }
  if (options->member()) return BenchRankMain(*options, env);
  return Launch(args, *options, env);
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
