#include "worker/model/cuda/cuda_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace gpu {

absl::Status CublasStatus(cublasStatus_t status, absl::string_view context) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInternal;
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      code = absl::StatusCode::kResourceExhausted;
      break;
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED:
      code = absl::StatusCode::kFailedPrecondition;
      break;
    case CUBLAS_STATUS_INVALID_VALUE:
      code = absl::StatusCode::kInvalidArgument;
      break;
    default:
      break;
  }
  return absl::Status(
      code, absl::StrCat(context, ": ", cublasGetStatusName(status), ": ",
                         cublasGetStatusString(status)));
}

}  // namespace gpu
}  // namespace gradsync
