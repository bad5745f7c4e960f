// Why a figure of `gradsync plan` may be off: the regimes its calibration
// never saw, or that the lab's validation missed. Each cell of the plan
// carries its reasons; the table prints their markers in a column and
// the reasons once each in a footnote (docs/simulator.md, "Uncertain
// regimes").
//
//   N  far beyond the calibrated N: N above twice the largest N of the
//      fitted cells (fitMaxWorkers). The lab validated a calibration
//      fitted at N <= 4 on N = 6 and 8, twice that, and no further.
//   L  a link rate never measured: the NIC's line rate below half the
//      slowest, or above twice the fastest, rate of the fitted cells.
//   C  a server CPU term never identified: a PS cell whose bottleneck is
//      a server's CPU while the calibration does not list its transport's
//      CPU cost (planeCpuSPerByte, grpcCpuSPerByte) among the fitted
//      members (the defaults list none).
//   I  incast: a PS cell where many workers push to few servers in small
//      partitions (at least kIncastMinFanIn flows into each server's NIC
//      at once, at least 4 workers per server, partitions of at most
//      kIncastMaxPartitionBytes). The simulator's incast term is one
//      efficiency past a threshold, fitted at small N if at all; an
//      earlier lab validation missed N = 8, K = 2 with small partitions
//      by -25 % (issue 41).
// The range markers (N, L) need a calibration that says what it was
// fitted on (calibration.h, the fit* members); CalibrationCaveat speaks
// for a calibration that does not.
//
// Threading: pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_PLAN_UNCERTAINTY_H_
#define GRADSYNC_STUDY_SIM_PLAN_UNCERTAINTY_H_

#include <string>
#include <vector>

#include "study/sim/sim_config.h"

namespace gradsync {
namespace sim {

inline constexpr int kIncastMinFanIn = 8;
inline constexpr double kIncastMaxPartitionBytes = 1 << 20;

struct Uncertainty {
  char marker = '?';   // 'N', 'L', 'C', 'I' (the top)
  std::string reason;  // one sentence for the footnote
};

// The reasons for `config`'s cell (layout, workers and servers set),
// whose bottleneck (FindBottleneck) is `bottleneck`; in the order N, L,
// C, I; empty when none applies.
std::vector<Uncertainty> UncertainRegimes(const SimConfig& config,
                                          const std::string& bottleneck);

// The markers of `reasons`, in order ("NI"); "" for none.
std::string Markers(const std::vector<Uncertainty>& reasons);

// A sentence on `calibration` as a whole: the defaults (nothing fitted)
// or a file that does not say what it was fitted on, so that N and L
// cannot be marked; "" for a calibration that says.
std::string CalibrationCaveat(const SimCalibration& calibration);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_PLAN_UNCERTAINTY_H_
