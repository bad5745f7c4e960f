// `gradsync lab sweep`: runs a grid of synchronisation jobs on the lab and
// records each cell's time from the jobs' own step metrics.
//
// The grid: workers N x shard counts K x gradient sizes S x link rates B x
// layouts (ring, PS on server hosts, PS colocated on the worker hosts).
// Every cell is one job of the synthetic model (worker/model/synthetic.h):
// a flat gradient of S bytes in one bucket, emulated compute that costs no
// CPU (0 ms by default), SGD. Its sync time is, per step, the slowest
// rank's StepMetrics.sync_busy_s (the time its synchronisation was busy),
// and the cell's figure is the median over the steps after the warm-up.
//
// Each cell also records how busy this machine's CPUs were while its steps
// ran: all emulated hosts share them, and a cell where they were nearly
// saturated says more about CPUs than links (cpu_bound; the report leaves
// such cells out of the fit and names them).
//
// Threading: RunSweep runs one cell at a time on the calling thread (plus a
// CPU sampler thread).
#ifndef GRADSYNC_CLI_LAB_LAB_SWEEP_H_
#define GRADSYNC_CLI_LAB_LAB_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/control/control_client.h"
#include "cli/lab/lab_config.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"
#include "proto/lab.pb.h"
#include "study/alpha_beta/sync_model.h"

namespace gradsync {
namespace lab {

struct SweepGrid {
  std::vector<int> workers = {2, 4, 6, 8};
  // Per N: numbers, "N", "N/2" (rounded down, at least 1) or "all" (1..N).
  std::vector<std::string> shards = {"1", "2", "N/2", "N"};
  std::vector<int64_t> bytes = {4 << 20, 16 << 20};
  std::vector<int64_t> rates_bps;  // empty: the lab's current rate
  std::vector<SyncLayout> layouts = {SyncLayout::kRing,
                                     SyncLayout::kPsSeparate};
};

struct CellSpec {
  SyncLayout layout = SyncLayout::kRing;
  int workers = 0;
  int shards = 0;  // 0 on the ring
  int64_t bytes = 0;
  int64_t rate_bps = 0;
};

// The shard counts `token` means for N workers, or INVALID_ARGUMENT.
[[nodiscard]] absl::StatusOr<std::vector<int>> ResolveShards(
    absl::string_view token, int workers);

// The cells of `grid` this lab can run, in run order (rate, then N, then
// layout, K and S), each once; what it cannot (N above the lab's workers,
// K above its server hosts, colocated without --colocate-ps) goes to
// *skipped as a sentence.
[[nodiscard]] absl::StatusOr<std::vector<CellSpec>> ExpandGrid(
    const SweepGrid& grid, const LabConfig& lab,
    std::vector<std::string>* skipped);

struct SweepOptions {
  int warmup_steps = 2;
  int measured_steps = 8;
  double compute_ms = 0;
  // Busier than this (share of all CPUs) marks a cell cpu_bound.
  double cpu_bound_above = 0.9;
  absl::Duration cell_timeout = absl::Minutes(5);
  int64_t ps_chunk_bytes = 0;  // 0: the PS default
  // PsSpec.partition_bytes of every PS cell (pipelining granularity).
  int64_t ps_partition_bytes = 128 << 10;
  // A network's layers instead of a flat gradient (ModelSpec.profile, at
  // profile_scale): every cell's S is then that network's, in the
  // buckets of bucket_bytes (0: DDP's 25 MiB).
  std::string profile;
  double profile_scale = 1;
  int64_t bucket_bytes = 0;
};

// The job one cell runs.
JobSpec CellJobSpec(const CellSpec& cell, const SweepOptions& options);

// Fills cell->sync_s, step_s, sync_samples_s and steps from the metrics of
// its finished job. FAILED_PRECONDITION when fewer steps than the warm-up
// plus one were reported by every rank.
[[nodiscard]] absl::Status SummariseCell(const GetMetricsResponse& metrics,
                                         int world_size, int warmup_steps,
                                         SweepCell* cell);

// Shapes every link to a rate and probes them; the probe's report.
using SetRate = std::function<absl::StatusOr<ProbeReport>(int64_t rate_bps)>;

// Runs the cells on the lab whose coordinator `client` reaches. Before the
// first cell of each rate it calls `set_rate` (whose reports go to
// *probes); a cell is link_ok when that probe passed. `on_cell` sees each
// finished cell. A cell whose job fails is recorded with its error and the
// sweep goes on; a failing `set_rate` or coordinator ends it.
[[nodiscard]] absl::StatusOr<std::vector<SweepCell>> RunSweep(
    cli::control::ControlClient& client, const std::vector<CellSpec>& cells,
    const SweepOptions& options, const SetRate& set_rate,
    std::vector<ProbeReport>* probes,
    const std::function<void(const SweepCell&)>& on_cell);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_SWEEP_H_
