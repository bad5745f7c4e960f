// 16-bit gradient kernels of the NCCL ring (half_kernels.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "worker/model/cuda/half_kernels.h"

namespace gradsync {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;
// The largest finite fp16.
constexpr float kFloat16Max = 65504.0f;

unsigned BlocksFor(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(blocks, kMaxBlocks)));
}

#define GRADSYNC_GRID_STRIDE_LOOP(i, n)                                       \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; \
       i < (n); i += static_cast<size_t>(gridDim.x) * blockDim.x)

__global__ void ToBFloat16Kernel(const float* src, uint16_t* dst, size_t n) {
  GRADSYNC_GRID_STRIDE_LOOP(i, n) {
    dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
  }
}

__global__ void ToFloat16Kernel(const float* src, uint16_t* dst, size_t n) {
  GRADSYNC_GRID_STRIDE_LOOP(i, n) {
    float x = src[i];
    // A finite value past 65504 clamps (half.h's FloatToFloat16); one in
    // (65504, 65520) rounds to 65504 anyway. Infinities and NaNs pass.
    if (isfinite(x)) x = fminf(fmaxf(x, -kFloat16Max), kFloat16Max);
    dst[i] = __half_as_ushort(__float2half_rn(x));
  }
}

__global__ void FromBFloat16Kernel(const uint16_t* src, float* dst, size_t n) {
  GRADSYNC_GRID_STRIDE_LOOP(i, n) {
    dst[i] = __bfloat162float(__ushort_as_bfloat16(src[i]));
  }
}

__global__ void FromFloat16Kernel(const uint16_t* src, float* dst, size_t n) {
  GRADSYNC_GRID_STRIDE_LOOP(i, n) {
    dst[i] = __half2float(__ushort_as_half(src[i]));
  }
}

}  // namespace

cudaError_t LaunchFloatsToBFloat16(const float* src, uint16_t* dst, size_t n,
                                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ToBFloat16Kernel<<<BlocksFor(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t LaunchFloatsToFloat16(const float* src, uint16_t* dst, size_t n,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ToFloat16Kernel<<<BlocksFor(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t LaunchBFloat16ToFloats(const uint16_t* src, float* dst, size_t n,
                                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FromBFloat16Kernel<<<BlocksFor(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t LaunchFloat16ToFloats(const uint16_t* src, float* dst, size_t n,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FromFloat16Kernel<<<BlocksFor(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace gradsync
