// CUDA and cuBLAS result codes as absl::Status, GPU detection, and a scoped
// current-device switch, for the CUDA model (worker/model/cuda).
//
// Every failing call becomes a status whose message names the call and what
// it was doing ("cublasSgemm (layer 2, forward): CUBLAS_STATUS_..."), so an
// operator can tell which layer of which pass failed.
//
// Threading: the CUDA current device is per host thread; ScopedCudaDevice
// affects only the calling thread. Everything else here is stateless.
//
// Example:
//   RETURN_IF_ERROR(gpu::RequireCudaDevice(device));
//   gpu::ScopedCudaDevice scoped(device);
//   RETURN_IF_ERROR(scoped.status());
//   RETURN_IF_ERROR(gpu::CudaStatus(cudaStreamSynchronize(s), "sync"));
#ifndef GRADSYNC_WORKER_MODEL_CUDA_CUDA_STATUS_H_
#define GRADSYNC_WORKER_MODEL_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace gpu {

// OK for cudaSuccess; otherwise "<context>: <error name>: <description>"
// with code RESOURCE_EXHAUSTED (out of memory), FAILED_PRECONDITION (no
// device or driver), INVALID_ARGUMENT (invalid value/device/pointer) or
// INTERNAL. Clears the runtime's last-error slot so that a non-sticky error
// does not resurface in an unrelated later check.
absl::Status CudaStatus(cudaError_t error, absl::string_view context);

// OK for CUBLAS_STATUS_SUCCESS; otherwise "<context>: <status name>" with
// code RESOURCE_EXHAUSTED (alloc failed), FAILED_PRECONDITION (not
// initialised, architecture mismatch), INVALID_ARGUMENT or INTERNAL.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view context);

// The number of CUDA devices this process sees: 0, never an error and never
// a crash, when there is no GPU, no driver or the driver is too old.
int VisibleCudaDeviceCount();

// OK when `device` is a visible CUDA device; INVALID_ARGUMENT when it is
// negative; FAILED_PRECONDITION ("no CUDA device visible ...") when the
// process sees no GPU or fewer than device + 1. `what` names the caller in
// the message ("CudaMlp").
absl::Status RequireCudaDevice(int device, absl::string_view what);

// Makes `device` the calling thread's current CUDA device for the scope and
// restores the previous one on exit. Check status() after construction.
class ScopedCudaDevice {
 public:
  explicit ScopedCudaDevice(int device);
  ~ScopedCudaDevice();
  ScopedCudaDevice(const ScopedCudaDevice&) = delete;
  ScopedCudaDevice& operator=(const ScopedCudaDevice&) = delete;

  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;
  bool restore_ = false;
  absl::Status status_;
};

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_CUDA_STATUS_H_
