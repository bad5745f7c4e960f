#include <algorithm>

#include "worker/model/cuda/mlp_kernels.h"

// Compiled with --fmad=false and IEEE division/square root (see
// CMakeLists.txt), so the elementwise arithmetic rounds as the CPU model's.

namespace gradsync {
namespace gpu {
namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill a large GPU, never more than
// the work needs.
constexpr size_t kMaxBlocks = 4096;

unsigned BlocksFor(size_t n, size_t per_block) {
  const size_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(blocks, kMaxBlocks)));
}

__global__ void BiasActivationKernel(float* y, const float* bias, size_t rows,
                                     size_t cols, bool relu) {
  const size_t n = rows * cols;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float v = y[k] + bias[k % cols];
    if (relu && v < 0.0f) v = 0.0f;  // as std::max(v, 0.0f)
    y[k] = v;
  }
}

__global__ void ReluMaskKernel(float* dx, const float* x, size_t n) {
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (!(x[k] > 0.0f)) dx[k] = 0.0f;
  }
}

// Block (32, 8): column j = blockIdx.x * 32 + threadIdx.x; thread row ty
// sums rows ty, ty + 8, ...; the 8 partial sums are then added in a fixed
// order, so the result does not depend on scheduling.
constexpr int kColumnsPerBlock = 32;
constexpr int kRowGroups = 8;

__global__ void ColumnSumsKernel(const float* m, size_t rows, size_t cols,
                                 bool accumulate, float* out) {
  __shared__ float partial[kRowGroups][kColumnsPerBlock];
  const size_t j =
      blockIdx.x * static_cast<size_t>(kColumnsPerBlock) + threadIdx.x;
  float sum = 0.0f;
  if (j < cols) {
    for (size_t i = threadIdx.y; i < rows; i += kRowGroups) {
      sum += m[i * cols + j];
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || j >= cols) return;
  float total = partial[0][threadIdx.x];
  for (int g = 1; g < kRowGroups; ++g) total += partial[g][threadIdx.x];
  out[j] = accumulate ? out[j] + total : total;
}

// One thread per example: the class counts of an MLP classifier are small.
__global__ void SoftmaxCrossEntropyKernel(const float* logits,
                                          const int32_t* labels, size_t rows,
                                          size_t classes, float normalizer,
                                          float* dlogits, float* loss,
                                          int32_t* correct) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < rows; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float* z = logits + i * classes;
    size_t best = 0;
    for (size_t j = 1; j < classes; ++j) {
      if (z[j] > z[best]) best = j;
    }
    const float max = z[best];
    float sum = 0.0f;
    for (size_t j = 0; j < classes; ++j) sum += expf(z[j] - max);
    const size_t label = static_cast<size_t>(labels[i]);
    loss[i] = max + logf(sum) - z[label];
    correct[i] = best == label ? 1 : 0;
    if (dlogits == nullptr) continue;
    float* d = dlogits + i * classes;
    for (size_t j = 0; j < classes; ++j) {
      const float p = expf(z[j] - max) / sum;
      d[j] = (j == label ? p - 1.0f : p) / normalizer;
    }
  }
}

}  // namespace

cudaError_t LaunchBiasActivation(float* y, const float* bias, size_t rows,
                                 size_t cols, bool relu, cudaStream_t stream) {
  const size_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  BiasActivationKernel<<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(
      y, bias, rows, cols, relu);
  return cudaGetLastError();
}

cudaError_t LaunchReluMask(float* dx, const float* x, size_t n,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ReluMaskKernel<<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(dx, x, n);
  return cudaGetLastError();
}

cudaError_t LaunchColumnSums(const float* m, size_t rows, size_t cols,
                             bool accumulate, float* out, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  const size_t blocks = (cols + kColumnsPerBlock - 1) / kColumnsPerBlock;
  if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
  ColumnSumsKernel<<<static_cast<unsigned>(blocks),
                     dim3(kColumnsPerBlock, kRowGroups), 0, stream>>>(
      m, rows, cols, accumulate, out);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxCrossEntropy(const float* logits,
                                      const int32_t* labels, size_t rows,
                                      size_t classes, float normalizer,
                                      float* dlogits, float* loss,
                                      int32_t* correct, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const unsigned blocks = BlocksFor(rows, kThreads);
  SoftmaxCrossEntropyKernel<<<blocks, kThreads, 0, stream>>>(
      logits, labels, rows, classes, normalizer, dlogits, loss, correct);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace gradsync
