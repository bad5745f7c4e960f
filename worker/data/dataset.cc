#include "worker/data/dataset.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status GatherExamples(const Dataset& dataset,
                            absl::Span<const size_t> indices, Batch* batch) {
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= dataset.num_examples) {
      return absl::OutOfRangeError(absl::StrCat(
          "example index ", indices[k], " (batch position ", k,
          ") is past the dataset's ", dataset.num_examples, " examples"));
    }
  }
  const size_t f = dataset.feature_size;
  batch->features.resize(indices.size() * f);
  batch->labels.resize(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    const float* src = dataset.features.data() + indices[k] * f;
    std::copy(src, src + f, batch->features.data() + k * f);
    batch->labels[k] = dataset.labels[indices[k]];
  }
  return absl::OkStatus();
}

}  // namespace gradsync
