// Small helpers shared by the NCCL backend's files: NCCL result codes as
// absl::Status, next to common/cuda_status.h's CUDA ones.
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
#include "common/cuda_status.h"

namespace gradsync {
namespace nccl_internal {

// CUDA runtime results and the scoped device switch are shared with the
// rest of gradsync (common/cuda_status.h).
using ::gradsync::gpu::CudaStatus;
using ::gradsync::gpu::DiscardCudaError;
using ::gradsync::gpu::ScopedCudaDevice;

// OK for ncclSuccess; otherwise a status whose code follows the NCCL result
// (ncclRemoteError and ncclSystemError mean a peer or the network failed:
// UNAVAILABLE; ncclInvalidArgument/ncclInvalidUsage: INVALID_ARGUMENT; the
// rest: INTERNAL), with NCCL's own last-error text appended. `comm` may be
// null. ncclInProgress is not an error and must be handled by the caller.
[[nodiscard]] absl::Status NcclStatus(ncclResult_t result,
                                      absl::string_view context,
                                      ncclComm_t comm);

}  // namespace nccl_internal
}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_NCCL_CUDA_UTIL_H_
