// One rank of `gradsync bench`: connects to the store, joins the run,
// creates the communicator, runs the sweep, and (rank 0) prints the table.
// It is what every process started by the launcher runs, and what a user
// runs on each host with --world/--rank/--store.
//
// Rendezvous keys, under "bench/<job>/gen-<g>/" in the store:
//   info/<rank>   "<pid>\t<host>\t<device>" for the "Using devices" lines
//   tcp/..., nccl/...  the communicator's own
// The generation g counts runs that reuse one --job on a long-lived store
// (gradsync-store): each rank adds 1 to "bench/<job>/joined" and run g is
// made of joins g*world+1 .. (g+1)*world, so stale keys of an earlier run
// are never read. A run that died half-joined shifts this count: give the
// next run a fresh --job.
#ifndef GRADSYNC_CLI_BENCH_BENCH_RANK_H_
#define GRADSYNC_CLI_BENCH_BENCH_RANK_H_

#include <ostream>

#include "absl/status/statusor.h"
#include "cli/bench/bench_options.h"
#include "cli/framework/command_env.h"
#include "collectives/store.h"

namespace gradsync {
namespace cli {
namespace bench {

// What a rank exits with when its run ended with wrong elements and the
// local launcher started it (BenchOptions::launched): the launcher then
// knows that the rank ran to the end, as its peers did, rather than failed
// (and stops none of them), and itself exits kExitFailure. Never seen
// outside bench: a rank started by hand (or by srun, mpirun, torchrun)
// exits kExitFailure, as every command does for a failed check
// (cli/framework/command_env.h).
inline constexpr int kExitLaunchedRankWrongResults = 3;

// Runs rank options.rank of options.world through `store` (not yet
// namespaced), printing the report to `out` on rank 0. Returns the summed
// wrong-element count over the sweep (0 when unchecked); errors name this
// rank and what failed.
[[nodiscard]] absl::StatusOr<int64_t> RunBenchRank(Store* store,
                                                   const BenchOptions& options,
                                                   std::ostream& out);

// The exit status of a rank whose run returned `wrong` (the wrong-element
// count, or the error it stopped on): kExitOk for none; for some,
// kExitLaunchedRankWrongResults when `launched`, else kExitFailure; an
// error: kExitFailure.
int RankExitStatus(const absl::StatusOr<int64_t>& wrong, bool launched);

// The process entry: connects to options.store, runs RunBenchRank with
// the report on env.out, prints errors on env.err, and returns
// RankExitStatus.
int BenchRankMain(const BenchOptions& options, const CommandEnv& env);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BENCH_RANK_H_
