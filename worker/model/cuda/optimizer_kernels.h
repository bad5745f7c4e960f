// The element-wise update kernels of CudaOptimizer. The per-step scalars
// (learning rate, bias corrections, ...) are computed on the host as
// common/optimizer.cc computes them (in double, rounded to float once;
// Adam's by that file's own AdamStepScalarsAt) and passed by value; the
// kernels then perform, element by element, the same fp32 operations in
// the same order as the CPU loops. The .cu is compiled without FMA
// contraction and with IEEE division and square root, so a GPU step is
// bitwise identical to the CPU step.
//
// Internal to worker/model/cuda. Threading: each call only enqueues work.
#ifndef GRADSYNC_WORKER_MODEL_CUDA_OPTIMIZER_KERNELS_H_
#define GRADSYNC_WORKER_MODEL_CUDA_OPTIMIZER_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/adam_step_scalars.h"

namespace gradsync {
namespace gpu {

struct SgdScalars {
  float neg_lr = 0.0f;
  float wd = 0.0f;
};

struct MomentumScalars {
  float neg_lr = 0.0f;
  float wd = 0.0f;
  float mu = 0.0f;
  float keep = 0.0f;  // 1 - dampening
  bool nesterov = false;
  bool first_step = false;
};

// AdamStepScalarsAt's values, and which decay applies.
struct AdamScalars : AdamStepScalars {
  bool decoupled = false;  // AdamW
};

cudaError_t LaunchSgdStep(const SgdScalars& s, float* p, const float* g,
                          size_t n, cudaStream_t stream);
cudaError_t LaunchMomentumStep(const MomentumScalars& s, float* p,
                               const float* g, float* buf, size_t n,
                               cudaStream_t stream);
cudaError_t LaunchAdamStep(const AdamScalars& s, float* p, const float* g,
                           float* m, float* v, size_t n, cudaStream_t stream);

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_OPTIMIZER_KERNELS_H_
