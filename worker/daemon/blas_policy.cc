#include "worker/daemon/blas_policy.h"

#include "absl/strings/str_cat.h"
#include "worker/model/blas.h"

namespace gradsync {

absl::StatusOr<int> BlasThreadPolicy::Acquire(int threads) {
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BLAS threads per rank must be >= 1, got ", threads));
  }
  absl::MutexLock lock(&mu_);
  if (active_jobs_ == 0) {
    absl::Status status = SetBlasThreads(threads);
    if (!status.ok()) return status;
  }
  ++active_jobs_;
  return BlasThreads();
}

void BlasThreadPolicy::Release() {
  absl::MutexLock lock(&mu_);
  if (active_jobs_ > 0) --active_jobs_;
}

}  // namespace gradsync
