#include <algorithm>
#include <cstdint>

#include "worker/model/cuda/param_hash_kernel.h"
#include "worker/model/param_hash_terms.h"

namespace gradsync {
namespace gpu {
namespace {

constexpr int kThreads = 256;  // a multiple of the warp size
constexpr size_t kMaxBlocks = 1024;
constexpr unsigned kFullWarp = 0xffffffffu;

__global__ void ParamHashSumKernel(const float* p, size_t n,
                                   unsigned long long* sum) {
  const size_t words = (n + 1) / 2;
  uint64_t acc = 0;
  for (size_t j = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       j < words; j += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t first = __float_as_uint(p[2 * j]);
    const uint32_t second = 2 * j + 1 < n ? __float_as_uint(p[2 * j + 1]) : 0u;
    acc += param_hash::Term(param_hash::Word(first, second), j);
  }
  // Every lane of every warp gets here (the loop's exit is per thread, the
  // block is whole warps): sum the warp, then one atomic per warp.
  for (int offset = 16; offset > 0; offset /= 2) {
    acc += __shfl_down_sync(kFullWarp, acc, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(sum, static_cast<unsigned long long>(acc));
  }
}

}  // namespace

cudaError_t LaunchParamHashSum(const float* p, size_t n,
                               unsigned long long* sum, cudaStream_t stream) {
  cudaError_t error = cudaMemsetAsync(sum, 0, sizeof(*sum), stream);
  if (error != cudaSuccess || n == 0) return error;
  const size_t words = (n + 1) / 2;
  const size_t blocks = std::min((words + kThreads - 1) / kThreads, kMaxBlocks);
  ParamHashSumKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      p, n, sum);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace gradsync
