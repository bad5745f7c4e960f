// `gradsync lab calibrate`'s pure parts: a recorded sweep (sweep.json, a
// SweepResults in protobuf's JSON) turned into the simulator's measured
// cells (study/sim/cell_prediction.h), split into the cells the fit sees
// (N <= max_workers) and the held-out ones, and the tables that report the
// fit and the held-out errors, as text and as Markdown. The command
// (lab_calibrate_command.h) reads the files, fits and writes.
//
// A sweep cell becomes a bulk synchronisation cell: its layout (the ring
// as the TCP ring runs it: halving-doubling up to 2 MiB, the ring above;
// ps; ps-colocated), N, K, S, its link rate, its PS partitions and the
// lab's PS transport (LabSpec.ps_transport; a sweep.json from before that
// field says ps_tensor_plane instead, where false meant gRPC), and its
// median sync time. Left out, each with a sentence: cells whose job
// failed or has no timing, model-profile cells (their sync time overlaps
// compute, which a bulk cell does not), labs with several workers per
// host (their traffic inside a host is not a shaped link), and unknown
// layouts. Cells whose link probe failed are held out of the fit (their
// rate is unknown) unless allowed, and noted wherever they are shown; a
// CPU-bound cell is fitted and noted (the servers' CPU cost is part of the
// calibration).
//
// Errors: INVALID_ARGUMENT naming the source for a file that is not a
// sweep.
// Threading: pure functions; thread-safe.
#ifndef GRADSYNC_CLI_LAB_LAB_CALIBRATE_H_
#define GRADSYNC_CLI_LAB_LAB_CALIBRATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/lab.pb.h"
#include "study/sim/calibration_fit.h"
#include "study/sim/cell_prediction.h"

namespace gradsync {
namespace lab {

// The TCP ring's halving-doubling threshold
// (collectives/tcp/tcp_communicator.h, halving_doubling_max_bytes): a
// lab "ring" cell of at most this many bytes runs halving-doubling.
inline constexpr double kLabHalvingDoublingMaxBytes = 2 << 20;

// One recorded sweep and its PS transport.
struct SweepFile {
  std::string source;  // its path, for messages
  SweepResults results;
  sim::PsTransport transport = sim::PsTransport::kPlane;
};

// The sweep in `json` (what `lab sweep` writes), read from `source`.
[[nodiscard]] absl::StatusOr<SweepFile> ParseSweepJson(
    const std::string& json, const std::string& source);

struct CellSplit {
  int max_workers = 4;            // the fit's cells: N <= this
  int server_cores = 1;           // each lab server's cores for its CPU cost
  bool unverified_links = false;  // fit cells whose link probe failed too
};

struct SplitCells {
  std::vector<sim::MeasuredCell> fit;       // N <= max_workers
  std::vector<sim::MeasuredCell> held_out;  // N > max_workers
  std::vector<std::string> skipped;         // "ring N=2 4M 1gbit: why"
};

// Every cell of `sweeps`, split as `split` says (the top).
SplitCells SplitSweepCells(const std::vector<SweepFile>& sweeps,
                           const CellSplit& split);

// Where the calibration came from, for its file: the machine calibrate
// runs on (`hostname`, `cores`) and the sweeps' machine, the newest
// sweep's date (UTC; `fallback_time` when none says) and the sweeps'
// commits.
void DescribeSource(const std::vector<SweepFile>& sweeps,
                    const std::string& hostname, int cores,
                    double fallback_time, sim::SimCalibration* calibration);

// The fit: one row per calibration member (value, how it was found), then
// the fitted cells' error table and summary. `markdown`: as Markdown.
std::string FormatFit(const sim::CalibrationFit& fit, bool markdown);

// The held-out cells' error table (cell, measured, simulated, error %, a
// marker beyond the per-cell limit, note), then the mean |error|, the
// worst cell, the count beyond the limit and the verdict against
// `targets`. `markdown`: as Markdown.
std::string FormatErrorTable(const std::vector<sim::CellError>& rows,
                             const sim::ErrorTargets& targets, bool markdown);

// One line: "mean |error| 4.2% over 12 cells (target <= 8%), worst +13.1%
// (ps N=8 K=2 8M 1gbit), 0 beyond 20%: PASS" (MISS when missed).
std::string FormatSummary(const sim::ErrorSummary& summary,
                          const sim::ErrorTargets& targets);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_CALIBRATE_H_
