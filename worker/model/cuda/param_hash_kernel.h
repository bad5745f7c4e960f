// The parameter fingerprint's sum of terms (worker/model/param_hash_terms.h)
// over a device buffer, reduced on the device, so that a GPU rank hashes
// its parameters every step without copying them to the host.
//
// Internal to worker/model/cuda. Threading: each call only enqueues work.
#ifndef GRADSYNC_WORKER_MODEL_CUDA_PARAM_HASH_KERNEL_H_
#define GRADSYNC_WORKER_MODEL_CUDA_PARAM_HASH_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gradsync {
namespace gpu {

// Enqueues on `stream`: *sum (device memory) = the sum mod 2^64 of
// param_hash::Term over the n floats at p (device memory).
cudaError_t LaunchParamHashSum(const float* p, size_t n,
                               unsigned long long* sum, cudaStream_t stream);

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_PARAM_HASH_KERNEL_H_
