// The BLAS thread count. OpenBLAS keeps one process-wide thread pool, so the
// count is a property of the process, not of a model: a worker hosting R
// ranks as threads sets it once, before starting them, to the cores it
// grants each rank (kDefaultBlasThreadsPerRank unless configured), and every
// rank's GEMMs then use that many threads. OpenBLAS's own default (all
// cores) would oversubscribe the host as soon as two ranks share it.
//
// Results are deterministic for a fixed thread count; a different count can
// change the last bits of a GEMM (a different split of the work).
//
// Errors: INVALID_ARGUMENT for a count < 1. Threading: call SetBlasThreads
// while no GEMM runs (at start-up); BlasThreads may be called any time.
//
// Example:
//   RETURN_IF_ERROR(SetBlasThreads(kDefaultBlasThreadsPerRank));
#ifndef GRADSYNC_WORKER_MODEL_BLAS_H_
#define GRADSYNC_WORKER_MODEL_BLAS_H_

#include "absl/status/status.h"

namespace gradsync {

inline constexpr int kDefaultBlasThreadsPerRank = 1;

// Sets the number of threads OpenBLAS uses for each call.
[[nodiscard]] absl::Status SetBlasThreads(int threads);

// The number of threads OpenBLAS currently uses for each call.
int BlasThreads();

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_BLAS_H_
