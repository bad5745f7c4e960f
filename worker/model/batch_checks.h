// Input checks shared by the CPU and CUDA MLPs (mlp.h, cuda/cuda_mlp.h), so
// that both refuse the same bad batches with the same messages, before any
// work starts. Pure functions; INVALID_ARGUMENT naming the problem.
#ifndef GRADSYNC_WORKER_MODEL_BATCH_CHECKS_H_
#define GRADSYNC_WORKER_MODEL_BATCH_CHECKS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace gradsync {

// Every label is a class index in [0, classes).
[[nodiscard]] absl::Status CheckLabels(absl::Span<const int32_t> labels,
                                       size_t classes);

// inputs.size() == batch * features, and batch <= INT_MAX (BLAS and cuBLAS
// take int sizes).
[[nodiscard]] absl::Status CheckBatchInputs(absl::Span<const float> inputs,
                                            size_t batch, size_t features);

// An evaluation over labels.size() examples in chunks of `batch_size`:
// batch_size >= 1, inputs of labels.size() * features floats, valid labels.
[[nodiscard]] absl::Status CheckEvaluationInputs(
    absl::Span<const float> inputs, absl::Span<const int32_t> labels,
    size_t batch_size, size_t features, size_t classes);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_BATCH_CHECKS_H_
