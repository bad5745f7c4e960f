// The small CUDA kernels of CudaMlp (the GEMMs are cuBLAS's), as plain host
// functions that enqueue one kernel on `stream` and return the launch error
// (cudaGetLastError). Matrices are row-major, [rows][cols], as in the CPU
// Mlp. Every kernel is deterministic: a fixed summation order, no atomics.
//
// Internal to worker/model/cuda; declared here (and not in the .cu) so that
// the host code compiles with the host compiler and the tests can call the
// kernels directly against CPU references.
//
// Threading: each call only enqueues work; the pointers must stay valid
// until the stream has run it.
#ifndef GRADSYNC_WORKER_MODEL_CUDA_MLP_KERNELS_H_
#define GRADSYNC_WORKER_MODEL_CUDA_MLP_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gradsync {
namespace gpu {

// y[i][j] += bias[j], then y[i][j] = max(y[i][j], 0) when `relu`.
cudaError_t LaunchBiasActivation(float* y, const float* bias, size_t rows,
                                 size_t cols, bool relu, cudaStream_t stream);

// dx[k] = 0 wherever !(x[k] > 0) (the ReLU's gradient mask), k < n.
cudaError_t LaunchReluMask(float* dx, const float* x, size_t n,
                           cudaStream_t stream);

// out[j] = sum_i m[i][j] when !accumulate, out[j] += sum_i m[i][j]
// otherwise (the bias gradient from the output gradient).
cudaError_t LaunchColumnSums(const float* m, size_t rows, size_t cols,
                             bool accumulate, float* out, cudaStream_t stream);

// Softmax cross-entropy of `rows` rows of `classes` logits against
// `labels` (which must lie in [0, classes): the caller checks them).
// loss[i] = max + log(sum exp(z - max)) - z[label] and correct[i] = 1 when
// the arg-max (lowest index on ties) is the label, else 0. When `dlogits`
// is not null, writes (softmax(z) - onehot(label)) / normalizer there.
cudaError_t LaunchSoftmaxCrossEntropy(const float* logits,
                                      const int32_t* labels, size_t rows,
                                      size_t classes, float normalizer,
                                      float* dlogits, float* loss,
                                      int32_t* correct, cudaStream_t stream);

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_MLP_KERNELS_H_
