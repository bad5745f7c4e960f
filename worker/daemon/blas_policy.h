// BlasThreadPolicy: who sets the process-wide OpenBLAS thread count
// (blas.h) in a worker that may run more than one job. The first job to
// start while none runs sets the count its spec asks for (threads per
// rank); jobs that start while another one runs share the count already
// set, since changing it under a running GEMM is unsafe, and are told so.
// Results are bitwise reproducible for a fixed count, so a job that had to
// share another's count is reproducible only against runs with that count.
//
//   ASSIGN_OR_RETURN(int threads, policy.Acquire(spec_threads));
//   ... run the ranks ...
//   policy.Release();
//
// Errors: INVALID_ARGUMENT for a count < 1 (nothing acquired).
// Threading: thread-safe. The daemon owns one, passed to its job runners.
#ifndef GRADSYNC_WORKER_DAEMON_BLAS_POLICY_H_
#define GRADSYNC_WORKER_DAEMON_BLAS_POLICY_H_

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gradsync {

class BlasThreadPolicy {
 public:
  // Registers a running job wanting `threads` per call; returns the count
  // in effect for it.
  [[nodiscard]] absl::StatusOr<int> Acquire(int threads);
  // Ends a job registered by Acquire.
  void Release();

 private:
  absl::Mutex mu_;
  int active_jobs_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_BLAS_POLICY_H_
