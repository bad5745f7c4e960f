#include "jobspec/job_memory.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/optimizer.h"
#include "common/units.h"
#include "models/model_kinds.h"

namespace gradsync {
namespace {

constexpr int64_t kFloat = 4;
// Fashion-MNIST as every rank loads it: 60,000 + 10,000 images of 784
// fp32 pixels, and an int32 label each (worker/data/dataset.h).
constexpr int64_t kFashionMnistImages = 70000;
constexpr int64_t kFashionMnistPixels = 784;

}  // namespace

std::string RankMemoryEstimate::Describe() const {
  if (!estimated) return "not estimated (an entrypoint job)";
  std::vector<std::string> parts;
  auto part = [&](const char* name, int64_t bytes) {
    if (bytes > 0) {
      parts.push_back(
          absl::StrCat(name, " ", FormatBytes(static_cast<double>(bytes))));
    }
  };
  part("parameters", parameters);
  part("gradients", gradients);
  part("optimizer state", optimizer);
  part("sync buffer", sync);
  part("activations", activations);
  part("data", data);
  return absl::StrCat(FormatBytes(static_cast<double>(total())), " per rank (",
                      absl::StrJoin(parts, ", "), ")");
}

RankMemoryEstimate EstimateRankMemory(const JobSpec& spec) {
  RankMemoryEstimate estimate;
  const ModelSpec& model = spec.model();
  const int64_t batch = std::max<int64_t>(spec.batch_size(), 1);
  const ModelKindSpec* kind = FindModelKind(model.kind());
  if (kind == nullptr || kind->runner != ModelKindSpec::Runner::kTrainer) {
    return estimate;  // an entrypoint: the user's program
  }
  const int64_t parameters = ModelParameterCount(model);
  const int64_t activations = kind->activation_floats == nullptr
                                  ? 0
                                  : kind->activation_floats(model, batch);
  estimate.estimated = true;
  estimate.parameters = parameters * kFloat;
  estimate.gradients = parameters * kFloat;
  absl::StatusOr<OptimizerKind> optimizer =
      ParseOptimizerKind(spec.optimizer().name());
  const int64_t buffers =
      optimizer.ok() ? static_cast<int64_t>(NumStateBuffers(*optimizer)) : 2;
  estimate.optimizer = buffers * parameters * kFloat;
  estimate.sync = parameters * kFloat;
  estimate.activations = activations * kFloat;
  if (spec.dataset().name() == "fashion-mnist") {
    estimate.data = kFashionMnistImages * (kFashionMnistPixels + 1) * kFloat;
  } else if (kind->input_floats != nullptr) {
    // Synthetic data for a model that reads it: one batch of inputs and
    // labels.
    estimate.data = batch * (kind->input_floats(model) + 1) * kFloat;
  }
  return estimate;
}

}  // namespace gradsync
