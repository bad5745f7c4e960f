// The four qualitative results of the PS-vs-ring study (docs/lab.md), read
// off a sweep's trusted cells and the alpha-beta model fitted to them
// (cli/lab/lab_report.h does the fit and writes these lines into its
// report), one line each, starting with PASS or MISS:
//   (a) PS with one shard grows linearly with N;
//   (b) the ring stays nearly flat in N (it grows as 2(N-1)/N);
//   (c) PS with K = N server hosts against the ring: the model's ratio
//       (2(N-1)/N in the PS's favour when pushes and pulls overlap);
//   (d) the crossover shard count K* observed within +-1 of the model.
// Each is judged per group of cells with one gradient size and link rate.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SWEEP_FINDINGS_H_
#define GRADSYNC_STUDY_SWEEP_FINDINGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "study/alpha_beta/sync_model.h"

namespace gradsync {
namespace study {

// How a sweep is judged.
struct SweepOptions {
  // The PS model: true when the sync PS overlaps pull and push, as
  // partitions make it (SweepPoint.partition_bytes gives the fill term; one
  // partition per server is the unpipelined case).
  bool pipelined_ps = true;
  double max_mean_error = 0.10;
  double max_cell_error = 0.20;
};

// One measured cell of a sweep, with the model's prediction for it.
struct SweepPoint {
  std::string layout;           // "ring", "ps", "ps-colocated" (sync_model.h)
  int workers = 0;              // N
  int shards = 0;               // K; 0 on the ring
  int64_t bytes = 0;            // S
  int64_t rate_bps = 0;         // the links' setting
  int64_t partition_bytes = 0;  // PS: each server's slice's partitions
  double sync_s = 0;            // measured: the median slowest rank's sync
  double predicted_s = 0;       // the fitted model's
};

// The findings (a) to (d) for each (bytes, rate) group of `trusted` (the
// cells fit for judging), in order of the groups. `model` is the fit at
// `reference_bps` (B scales with each group's rate).
std::vector<std::string> SweepFindings(const std::vector<SweepPoint>& trusted,
                                       const LinkModel& model,
                                       double reference_bps,
                                       const SweepOptions& options);

}  // namespace study
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SWEEP_FINDINGS_H_
