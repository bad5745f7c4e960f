// Dataset: an in-memory labelled dataset of fixed-size fp32 feature vectors
// (images flattened row-major), and the copying of chosen examples into a
// contiguous batch, the form Mlp::ForwardBackward takes.
//
// Errors: GatherExamples returns OUT_OF_RANGE for an index >= the number of
// examples (nothing is written). Threading: a Dataset is read-only after
// loading and may be shared by every rank of a process; a Batch belongs to
// one thread.
//
// Example:
//   Batch batch;
//   RETURN_IF_ERROR(GatherExamples(train, indices, &batch));
//   mlp.ForwardBackward(batch.features, batch.labels);
#ifndef GRADSYNC_WORKER_DATA_DATASET_H_
#define GRADSYNC_WORKER_DATA_DATASET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace gradsync {

struct Dataset {
  size_t num_examples = 0;
  size_t feature_size = 0;      // floats per example (rows * cols for images)
  size_t rows = 0;              // image height (informational)
  size_t cols = 0;              // image width (informational)
  size_t num_classes = 0;       // labels lie in [0, num_classes)
  std::vector<float> features;  // [num_examples][feature_size]
  std::vector<int32_t> labels;  // [num_examples]

  absl::Span<const float> example(size_t i) const {
    return absl::MakeConstSpan(features).subspan(i * feature_size,
                                                 feature_size);
  }
};

// A contiguous batch: features [size()][feature_size] and labels [size()].
struct Batch {
  std::vector<float> features;
  std::vector<int32_t> labels;
  size_t size() const { return labels.size(); }
};

// Replaces `batch` with examples `indices` of `dataset`, in that order.
[[nodiscard]] absl::Status GatherExamples(const Dataset& dataset,
                                          absl::Span<const size_t> indices,
                                          Batch* batch);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DATA_DATASET_H_
