#include "worker/model/blas.h"

#include <cblas.h>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status SetBlasThreads(int threads) {
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BLAS thread count must be >= 1, got ", threads));
  }
  openblas_set_num_threads(threads);
  return absl::OkStatus();
}

int BlasThreads() { return openblas_get_num_threads(); }

}  // namespace gradsync
