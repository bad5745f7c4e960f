// The device side of 16-bit gradients on the NCCL ring (JobSpec gradDtype
// bf16|fp16 with ringBackend nccl): round an fp32 bucket into a 16-bit copy
// for ncclAllReduce, and widen the summed copy back.
//
// The rounding is collectives/half.h's, bit for bit on every non-NaN value:
// to nearest, ties to even (__float2bfloat16_rn, __float2half_rn), and fp16
// clamps a finite value beyond +-65504 to +-65504 (the loss-scale-free
// clamp) where __float2half_rn alone would overflow to infinity. Infinities
// stay infinite; a NaN stays a NaN, but its payload is CUDA's canonical one,
// not half.h's (no gradient path compares NaN bits).
//
// Internal to worker/model/cuda and its users. Errors: the launch's
// cudaError_t (cudaGetLastError after the launch). Threading: each call
// only enqueues work on `stream`, with the buffers' device current.
#ifndef GRADSYNC_WORKER_MODEL_CUDA_HALF_KERNELS_H_
#define GRADSYNC_WORKER_MODEL_CUDA_HALF_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gradsync {
namespace gpu {

// dst[i] = bfloat16(src[i]) / fp16(src[i]), i < n; n may be 0.
cudaError_t LaunchFloatsToBFloat16(const float* src, uint16_t* dst, size_t n,
                                   cudaStream_t stream);
cudaError_t LaunchFloatsToFloat16(const float* src, uint16_t* dst, size_t n,
                                  cudaStream_t stream);
// dst[i] = float(src[i]), exact.
cudaError_t LaunchBFloat16ToFloats(const uint16_t* src, float* dst, size_t n,
                                   cudaStream_t stream);
cudaError_t LaunchFloat16ToFloats(const uint16_t* src, float* dst, size_t n,
                                  cudaStream_t stream);

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_HALF_KERNELS_H_
