// Small helpers shared by the NCCL backend's files: turning CUDA and NCCL
// result codes into absl::Status, and a scoped current-device switch.
// Internal to collectives/nccl; nothing outside it should include this.
//
// Threading: the CUDA current device is per host thread, so
// ScopedCudaDevice only affects the calling thread. Everything else here is
// stateless.
#ifndef GRADSYNC_COLLECTIVES_NCCL_CUDA_UTIL_H_
#define GRADSYNC_COLLECTIVES_NCCL_CUDA_UTIL_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace nccl_internal {

// OK for cudaSuccess; otherwise INTERNAL (UNAVAILABLE for "no device/driver"
// codes, RESOURCE_EXHAUSTED for out of memory) with "<context>: <CUDA error
// name>: <description>". Also clears the runtime's last-error slot so a
// non-sticky error does not resurface in an unrelated later check.
absl::Status CudaStatus(cudaError_t error, absl::string_view context);

// OK for ncclSuccess; otherwise a status whose code follows the NCCL result
// (ncclRemoteError and ncclSystemError mean a peer or the network failed:
// UNAVAILABLE; ncclInvalidArgument/ncclInvalidUsage: INVALID_ARGUMENT; the
// rest: INTERNAL), with NCCL's own last-error text appended. `comm` may be
// null. ncclInProgress is not an error and must be handled by the caller.
absl::Status NcclStatus(ncclResult_t result, absl::string_view context,
                        ncclComm_t comm);

// Makes `device` the calling thread's current CUDA device for the scope and
// restores the previous one on exit (also when code inside the scope
// switched devices itself). Check status() after construction: when it is
// not OK the current device may not be `device`.
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

}  // namespace nccl_internal
}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_NCCL_CUDA_UTIL_H_
