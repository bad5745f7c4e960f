// CUDA runtime results as absl::Status, and the device checks every GPU
// part of gradsync shares (the NCCL backend, the CUDA model, the worker's
// --devices check). Built only when the CUDA toolkit is found
// (gradsync_cuda_status).
//
// Threading: the CUDA current device is per host thread, so
// ScopedCudaDevice only affects the calling thread. Everything else here is
// stateless.
#ifndef GRADSYNC_COMMON_CUDA_STATUS_H_
#define GRADSYNC_COMMON_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace gpu {

// OK for cudaSuccess; otherwise "<context>: <CUDA error name>:
// <description>" with code FAILED_PRECONDITION for "no usable device"
// errors (no device, driver missing or too old, no kernel image for this
// GPU), RESOURCE_EXHAUSTED for out of memory, INVALID_ARGUMENT for invalid
// values, devices and pointers, INTERNAL otherwise. Also clears the
// runtime's last-error slot, so that a non-sticky error does not resurface
// in an unrelated later check.
[[nodiscard]] absl::Status CudaStatus(cudaError_t error,
                                      absl::string_view context);

// For cleanup calls whose failure nothing can act on (frees and destroys in
// destructors and on error paths): ignores `error`, but clears the runtime's
// last-error slot, so that it does not resurface in an unrelated later
// kernel-launch check (cudaGetLastError).
void DiscardCudaError(cudaError_t error);

// cudaEventQuery without its side effect: the runtime records
// cudaErrorNotReady (work still running, not an error) as the thread's last
// error, where the next kernel-launch check (cudaGetLastError) would report
// it; this clears it (as PyTorch's CUDAStream::query does). Other errors
// are returned as they are.
cudaError_t QueryEvent(cudaEvent_t event);

// The number of CUDA devices this process sees: 0, never an error and never
// a crash, when there is no GPU, no driver or the driver is too old.
int VisibleCudaDeviceCount();

// OK when `device` is a visible CUDA device; INVALID_ARGUMENT when it is
// negative; FAILED_PRECONDITION ("no CUDA device visible ...") when the
// process sees no GPU or fewer than device + 1. `what` names the caller in
// the message ("CudaMlp", "--devices cuda:0").
[[nodiscard]] absl::Status RequireCudaDevice(int device,
                                             absl::string_view what);

// Makes `device` the calling thread's current CUDA device for the scope and
// restores the previous one on exit (also when code inside the scope
// switched devices itself), unless the thread had no CUDA context before:
// then `device` stays current, rather than a context being made on device 0
// (which a fresh thread reports as its device). Check status() after
// construction: when it is not OK the current device may not be `device`.
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

#endif  // GRADSYNC_COMMON_CUDA_STATUS_H_
