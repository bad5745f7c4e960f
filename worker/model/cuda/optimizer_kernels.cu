#include <algorithm>

#include "worker/model/cuda/optimizer_kernels.h"

// Each kernel mirrors its loop in common/optimizer.cc operation for
// operation; keep them in step.

namespace gradsync {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

unsigned BlocksFor(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(
      std::max<size_t>(1, std::min(blocks, kMaxBlocks)));
}

#define GRADSYNC_GRID_STRIDE_LOOP(i, n)                                       \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; \
       i < (n); i += static_cast<size_t>(gridDim.x) * blockDim.x)

__global__ void SgdKernel(SgdScalars s, float* p, const float* g, size_t n) {
  if (s.wd != 0.0f) {
    GRADSYNC_GRID_STRIDE_LOOP(i, n) {
      p[i] = p[i] + s.neg_lr * (g[i] + s.wd * p[i]);
    }
  } else {
    GRADSYNC_GRID_STRIDE_LOOP(i, n) { p[i] = p[i] + s.neg_lr * g[i]; }
  }
}

__global__ void MomentumKernel(MomentumScalars s, float* p, const float* g,
                               float* buf, size_t n) {
  GRADSYNC_GRID_STRIDE_LOOP(i, n) {
    float d = g[i];
    if (s.wd != 0.0f) d = d + s.wd * p[i];
    buf[i] = s.first_step ? d : s.mu * buf[i] + s.keep * d;
    if (s.nesterov) {
      d = d + s.mu * buf[i];
    } else {
      d = buf[i];
    }
    p[i] = p[i] + s.neg_lr * d;
  }
}

__global__ void AdamKernel(AdamScalars s, float* p, const float* g, float* m,
                           float* v, size_t n) {
  GRADSYNC_GRID_STRIDE_LOOP(i, n) {
    float grad = g[i];
    if (s.decoupled) {
      p[i] = p[i] * s.decay;
    } else if (s.wd != 0.0f) {
      grad = grad + s.wd * p[i];
    }
    m[i] = s.w < 0.5f ? m[i] + s.w * (grad - m[i])
                      : grad - (grad - m[i]) * (1.0f - s.w);
    v[i] = s.b2 * v[i] + (s.one_minus_b2 * grad) * grad;
    const float denom = sqrtf(v[i]) / s.bc2_sqrt + s.eps;
    p[i] = p[i] + s.neg_step_size * (m[i] / denom);
  }
}

#undef GRADSYNC_GRID_STRIDE_LOOP

}  // namespace

cudaError_t LaunchSgdStep(const SgdScalars& s, float* p, const float* g,
                          size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdKernel<<<BlocksFor(n), kThreads, 0, stream>>>(s, p, g, n);
  return cudaGetLastError();
}

cudaError_t LaunchMomentumStep(const MomentumScalars& s, float* p,
                               const float* g, float* buf, size_t n,
                               cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MomentumKernel<<<BlocksFor(n), kThreads, 0, stream>>>(s, p, g, buf, n);
  return cudaGetLastError();
}

cudaError_t LaunchAdamStep(const AdamScalars& s, float* p, const float* g,
                           float* m, float* v, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AdamKernel<<<BlocksFor(n), kThreads, 0, stream>>>(s, p, g, m, v, n);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace gradsync
