#include "collectives/nccl/cuda_util.h"

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace nccl_internal {

absl::Status CudaStatus(cudaError_t error, absl::string_view context) {
  if (error == cudaSuccess) return absl::OkStatus();
  // Reset the per-thread last error; sticky (context-corrupting) errors stay
  // sticky regardless, non-sticky ones must not leak into later checks.
  (void)cudaGetLastError();
  absl::StatusCode code = absl::StatusCode::kInternal;
  switch (error) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
      code = absl::StatusCode::kUnavailable;
      break;
    case cudaErrorMemoryAllocation:
      code = absl::StatusCode::kResourceExhausted;
      break;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
      code = absl::StatusCode::kInvalidArgument;
      break;
    default:
      break;
  }
  return absl::Status(code, absl::StrCat(context, ": ", cudaGetErrorName(error),
                                         ": ", cudaGetErrorString(error)));
}

absl::Status NcclStatus(ncclResult_t result, absl::string_view context,
                        ncclComm_t comm) {
  if (result == ncclSuccess) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInternal;
  switch (result) {
    case ncclRemoteError:
    case ncclSystemError:
      code = absl::StatusCode::kUnavailable;
      break;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      code = absl::StatusCode::kInvalidArgument;
      break;
    default:
      break;
  }
  const char* last = ncclGetLastError(comm);
  return absl::Status(
      code,
      absl::StrCat(context, ": NCCL error ", static_cast<int>(result), " (",
                   ncclGetErrorString(result), ")",
                   last != nullptr && last[0] != '\0' ? absl::StrCat(": ", last)
                                                      : std::string()));
}

ScopedCudaDevice::ScopedCudaDevice(int device) {
  status_ = CudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
  if (!status_.ok()) return;
  restore_ = true;
  if (previous_ == device) return;
  status_ = CudaStatus(cudaSetDevice(device),
                       absl::StrCat("cudaSetDevice(", device, ")"));
}

ScopedCudaDevice::~ScopedCudaDevice() {
  if (!restore_) return;
  // Restore whatever happened inside the scope: the code in it may switch
  // devices itself (so may NCCL's teardown).
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == previous_) return;
  (void)cudaSetDevice(previous_);
}

}  // namespace nccl_internal
}  // namespace gradsync
