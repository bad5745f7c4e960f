// cuBLAS result codes as absl::Status for the CUDA model
// (worker/model/cuda); the CUDA runtime's, GPU detection and the scoped
// device switch are common/cuda_status.h, included here.
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
#include "common/cuda_status.h"

namespace gradsync {
namespace gpu {

// OK for CUBLAS_STATUS_SUCCESS; otherwise "<context>: <status name>" with
// code RESOURCE_EXHAUSTED (alloc failed), FAILED_PRECONDITION (not
// initialised, architecture mismatch), INVALID_ARGUMENT or INTERNAL.
[[nodiscard]] absl::Status CublasStatus(cublasStatus_t status,
                                        absl::string_view context);

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_CUDA_STATUS_H_
