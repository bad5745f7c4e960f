// What `gradsync bench allreduce --backend ps` is asked to measure: the
// shard count K, where each shard lives, the checks on the flags, and the
// bus-bandwidth factor of the PS path. Pure functions; thread-safe.
//
// One PS "all-reduce" of S bytes is one PsClient::PushPull per rank: the
// rank pushes its S-byte gradient (shard k its slice) and pulls the S bytes
// of updated parameters. In sync mode a shard applies the step only once
// every rank's slice is in, so the pushes and the pulls do not overlap. On
// the busiest link (a worker's: S each way; a shard's: N*S/K each way)
//
//   t >= 2 * max(S, N*S/K) / B,
//
// so busbw = algbw * 2 * max(1, N/K) (PsBusFactor,
// study/alpha_beta/sync_bandwidth.h) reaches B when the PS runs at link speed,
// as busbw = algbw * 2(N-1)/N does for the ring (whose pushes and pulls,
// reduce-scatter and all-gather, also follow each other).
#ifndef GRADSYNC_CLI_BENCH_PS_OPTIONS_H_
#define GRADSYNC_CLI_BENCH_PS_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/bench/bench_options.h"

namespace gradsync {
namespace cli {
namespace bench {

// K: options.ps_shards, else one shard per --ps-addresses entry, else 1.
int PsShardCount(const BenchOptions& options);

// The address of each of the K shards: ps_addresses[k % size] (one server
// may hold several shards).
std::vector<std::string> PsShardAddresses(const BenchOptions& options);

// INVALID_ARGUMENT, naming the flag, unless the options describe a PS run:
// allreduce of float sums, --ps-addresses entries that are host:port, and
// in member mode (--rank) a non-empty --ps-addresses, a --ps-chunk within
// 4 B .. 64 MiB, at least one float per shard at the smallest size.
[[nodiscard]] absl::Status ValidatePsOptions(const BenchOptions& options);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_PS_OPTIONS_H_
