// The sweep's report: the alpha-beta model next to every measured cell,
// the fit, the errors and the four qualitative results of the PS-vs-ring
// study (docs/lab.md). Pure functions of a SweepResults, unit-tested on a
// recorded sweep. The analysis on plain numbers is the study's: the fits
// (study/alpha_beta/layout_fit.h) and the findings (a) to (d)
// (study/sweep_findings.h); this file reads and fills the lab's records
// (proto/lab.proto) around them.
//
// AnalyseSweep:
//  1. gives each cell its model coefficients (study/alpha_beta/sync_model.h);
//  2. fits alpha and B by least squares over the trusted cells: the job
//     succeeded, the link probe at its rate passed, and the CPUs were not
//     saturated (cpu_bound). Where the cells cannot separate alpha from B
//     (one size: B would come out above what the links carry, traded
//     against a large alpha), B is held at the links' TCP payload rate
//     and alpha fitted alone, and the fit's line says so;
//  3. predicts every cell and its relative error; the mean and largest
//     absolute errors over the trusted cells;
//  4. writes the findings, one line each, starting with PASS, MISS or
//     N/A:
//       fidelity  mean |error| <= 10% and no cell beyond 20%;
//       (a) PS with one shard grows linearly with N;
//       (b) the ring stays nearly flat in N (it grows as 2(N-1)/N);
//       (c) PS with K = N server hosts against the ring: the model's ratio
//           (2(N-1)/N in the PS's favour when pushes and pulls overlap);
//       (d) the crossover shard count K* observed within +-1 of the model
//           (study::SweepFindings);
//     and, for every cell off by more than 20%, why it may be (CPU-bound,
//     an unverified link, too few steps).
#ifndef GRADSYNC_CLI_LAB_LAB_REPORT_H_
#define GRADSYNC_CLI_LAB_LAB_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "proto/lab.pb.h"
#include "study/alpha_beta/sync_model.h"
#include "study/sweep_findings.h"

namespace gradsync {
namespace lab {

// The PS model (pipelined or not) and the error targets.
using ReportOptions = study::SweepOptions;

// The model's case for a cell. INVALID_ARGUMENT for an unknown layout or
// bad counts.
[[nodiscard]] absl::StatusOr<SyncCase> CellCase(const SweepCell& cell,
                                                const ReportOptions& options);

// Whether a cell is trusted for the fit (see the top).
bool Trusted(const SweepCell& cell);

// Steps 1-4 above, in place. INVALID_ARGUMENT when no cell is trusted or a
// cell is malformed.
[[nodiscard]] absl::Status AnalyseSweep(SweepResults* results,
                                        const ReportOptions& options);

// Measured against predicted, one row per cell, then the fit and the
// findings.
std::string FormatSweepReport(const SweepResults& results);

// One CSV row per cell with a header.
std::string SweepCsv(const SweepResults& results);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_REPORT_H_
