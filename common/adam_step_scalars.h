// The fp32 scalars of one Adam (or AdamW) step, as the CPU optimizer
// (common/optimizer.h, AdamStepScalarsAt) derives them and both the CPU
// loops and the CUDA kernels (worker/model/cuda/optimizer_kernels.h) use
// them. Kept free of other includes so that nvcc-compiled code can take it.
#ifndef GRADSYNC_COMMON_ADAM_STEP_SCALARS_H_
#define GRADSYNC_COMMON_ADAM_STEP_SCALARS_H_

namespace gradsync {

struct AdamStepScalars {
  float neg_step_size = 0.0f;  // -lr / (1 - beta1^t)
  float bc2_sqrt = 0.0f;       // sqrt(1 - beta2^t)
  float w = 0.0f;              // 1 - beta1: the lerp weight of exp_avg
  float b2 = 0.0f;             // beta2
  float one_minus_b2 = 0.0f;   // 1 - beta2
  float eps = 0.0f;
  float wd = 0.0f;     // weight decay
  float decay = 0.0f;  // 1 - lr * wd: AdamW's decoupled decay
};

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_ADAM_STEP_SCALARS_H_
