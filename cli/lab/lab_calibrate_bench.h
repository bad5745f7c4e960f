// `gradsync lab calibrate --from-bench FILE`'s pure part: the output of
// `gradsync bench allreduce --backend ring|ps -o json` on a real cluster
// (JSON lines, one per size, cli/bench/report.h's FormatJsonRow) turned
// into the simulator's measured cells (study/sim/cell_prediction.h), so
// that the calibration's fit (study/sim/calibration_fit.h) runs on them
// as on a lab sweep's.
//
// A row is a bulk synchronisation of `size` bytes over `ranks` ranks,
// measured as its out-of-place time (time_us, the slowest rank's average
// per iteration). The rows do not say what the cluster is, so the caller
// does (BenchCluster): the line rate of each host's link, one rank per
// host (the bench's ranks share no host on a cluster, and a host's ranks
// talk over shared memory, which the simulator's NIC does not model), and
// for the PS rows where the servers run, their partitions and transport
// (the bench's --ps-partition and --ps-transport, which its rows do not
// carry either). Layouts: backend "ps" with `shards` K; backend "ring"
// with algo "ring", "hd" (halving-doubling) or "auto" (the TCP ring's
// choice: halving-doubling up to 2 MiB, the ring above, as the lab's).
// Left out, each with a sentence: summary rows, other collectives,
// backend nccl, other algorithms, single ranks and untimed rows.
//
// Errors: INVALID_ARGUMENT naming the source and line for a line that is
// not a JSON object, or a row without its numbers.
// Threading: pure functions; thread-safe.
#ifndef GRADSYNC_CLI_LAB_LAB_CALIBRATE_BENCH_H_
#define GRADSYNC_CLI_LAB_LAB_CALIBRATE_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jobspec/job_spec.h"
#include "study/sim/cell_prediction.h"

namespace gradsync {
namespace lab {

struct BenchCluster {
  int64_t link_bps = 0;       // each host's line rate, bits/s (> 0)
  bool ps_colocated = false;  // the servers run on the ranks' hosts
  // The bench's --ps-partition; its default is the spec's.
  double ps_partition_bytes = kDefaultPsPartitionBytes;
  sim::PsTransport ps_transport = sim::PsTransport::kPlane;
  int server_cores = 1;
};

struct BenchCells {
  std::vector<sim::MeasuredCell> cells;
  std::vector<std::string> skipped;  // "FILE:3: why"
};

// The cells of `text`, read from `source` on `cluster`.
[[nodiscard]] absl::StatusOr<BenchCells> ParseBenchJson(
    const std::string& text, const std::string& source,
    const BenchCluster& cluster);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_CALIBRATE_BENCH_H_
