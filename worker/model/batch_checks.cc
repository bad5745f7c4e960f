#include "worker/model/batch_checks.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {

absl::Status CheckLabels(absl::Span<const int32_t> labels, size_t classes) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || static_cast<size_t>(labels[i]) >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", labels[i], " of example ", i,
                       " is not a class index in [0, ", classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBatchInputs(absl::Span<const float> inputs, size_t batch,
                              size_t features) {
  if (batch > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch of ", batch, " examples exceeds ", INT_MAX));
  }
  if (inputs.size() / features != batch || inputs.size() % features != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs hold ", inputs.size(), " floats; ", batch, " examples of ",
        features, " features need ", batch * features));
  }
  return absl::OkStatus();
}

absl::Status CheckEvaluationInputs(absl::Span<const float> inputs,
                                   absl::Span<const int32_t> labels,
                                   size_t batch_size, size_t features,
                                   size_t classes) {
  if (batch_size == 0) {
    return absl::InvalidArgumentError("evaluation batch size must be >= 1");
  }
  const size_t n = labels.size();
  if (inputs.size() != n * features ||
      (n > 0 && inputs.size() / n != features)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs hold ", inputs.size(), " floats; ", n, " examples of ",
        features, " features need ", n * features));
  }
  return CheckLabels(labels, classes);
}

}  // namespace gradsync
