#include "common/cuda_status.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace gpu {

absl::Status CudaStatus(cudaError_t error, absl::string_view context) {
  if (error == cudaSuccess) return absl::OkStatus();
  // Reset the per-thread last error; sticky (context-corrupting) errors stay
  // sticky regardless, non-sticky ones must not leak into later checks.
  (void)cudaGetLastError();
  absl::StatusCode code = absl::StatusCode::kInternal;
  switch (error) {
    case cudaErrorMemoryAllocation:
      code = absl::StatusCode::kResourceExhausted;
      break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorNoKernelImageForDevice:
      code = absl::StatusCode::kFailedPrecondition;
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

cudaError_t QueryEvent(cudaEvent_t event) {
  const cudaError_t result = cudaEventQuery(event);
  if (result == cudaErrorNotReady) (void)cudaGetLastError();
  return result;
}

int VisibleCudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

absl::Status RequireCudaDevice(int device, absl::string_view what) {
  if (device < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": CUDA device index ", device, " is negative"));
  }
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": no CUDA device visible (cudaGetDeviceCount: ",
                     cudaGetErrorName(error), ": ", cudaGetErrorString(error),
                     "); run on a GPU host or use the CPU model"));
  }
  if (count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(what,
                     ": no CUDA device visible (cudaGetDeviceCount returned "
                     "0); run on a GPU host or use the CPU model"));
  }
  if (device >= count) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": CUDA device ", device, " is not visible; this ",
        "process sees ", count, " device(s) (check ", "CUDA_VISIBLE_DEVICES)"));
  }
  return absl::OkStatus();
}

void DiscardCudaError(cudaError_t error) {
  if (error != cudaSuccess) (void)cudaGetLastError();
}

namespace {

// Whether the calling thread has a current CUDA context: the driver's
// cuCtxGetCurrent, reached through the runtime, so that nothing links
// libcuda. When it cannot be asked, the answer is yes (restore as before).
bool ThreadHasContext() {
  // Looked up once; an immutable function pointer.
  static const PFN_cuCtxGetCurrent_v4000 get_current = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 4000,
                                         cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<PFN_cuCtxGetCurrent_v4000>(fn);
  }();
  if (get_current == nullptr) return true;
  CUcontext context = nullptr;
  return get_current(&context) != CUDA_SUCCESS || context != nullptr;
}

}  // namespace

ScopedCudaDevice::ScopedCudaDevice(int device) {
  status_ = CudaStatus(cudaGetDevice(&previous_), "cudaGetDevice");
  if (!status_.ok()) return;
  if (previous_ == device) {
    restore_ = true;
    return;
  }
  // A thread that never used a device reads device 0 here; restoring that
  // would create a context on GPU 0 (cudaSetDevice initialises the primary
  // context), costing memory there for a process that drives only GPU 1,
  // say, or failing where GPU 0 is in exclusive-process mode.
  restore_ = ThreadHasContext();
  status_ = CudaStatus(cudaSetDevice(device),
                       absl::StrCat("cudaSetDevice(", device, ")"));
}

ScopedCudaDevice::~ScopedCudaDevice() {
  if (!restore_) return;
  // Restore whatever happened inside the scope: the code in it may switch
  // devices itself (so may NCCL's teardown).
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == previous_) return;
  DiscardCudaError(cudaSetDevice(previous_));
}

}  // namespace gpu
}  // namespace gradsync
