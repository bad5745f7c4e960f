#include "jobspec/job_memory.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/optimizer.h"
#include "common/units.h"

namespace gradsync {
namespace {

constexpr int64_t kFloat = 4;
// Fashion-MNIST as every rank loads it: 60,000 + 10,000 images of 784
// fp32 pixels, and an int32 label each (worker/data/dataset.h).
constexpr int64_t kFashionMnistImages = 70000;
constexpr int64_t kFashionMnistPixels = 784;

// Weights and biases of an mlp with `widths`, and the floats of one
// batch's activations: every layer's output plus two deltas of the widest.
void MlpShape(const ModelSpec& model, int64_t batch, int64_t* parameters,
              int64_t* activations) {
  int64_t widest = 0;
  int64_t outputs = 0;
  for (int i = 0; i < model.layer_sizes_size(); ++i) {
    const int64_t width = model.layer_sizes(i);
    widest = std::max(widest, width);
    outputs += width;
    if (i > 0) *parameters += (model.layer_sizes(i - 1) + 1) * width;
  }
  *activations = batch * (outputs + 2 * widest);
}

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
  int64_t parameters = 0;
  int64_t activations = 0;
  int64_t input_width = 0;
  if (model.kind() == "mlp") {
    MlpShape(model, batch, &parameters, &activations);
    input_width = model.layer_sizes_size() > 0 ? model.layer_sizes(0) : 0;
  } else if (model.kind() == "synthetic") {
    parameters = model.synthetic_floats();
  } else {
    return estimate;  // entrypoint: the user's program
  }
  estimate.estimated = true;
  estimate.parameters = parameters * kFloat;
  estimate.gradients = parameters * kFloat;
  absl::StatusOr<OptimizerKind> kind =
      ParseOptimizerKind(spec.optimizer().name());
  const int64_t buffers =
      kind.ok() ? static_cast<int64_t>(NumStateBuffers(*kind)) : 2;
  estimate.optimizer = buffers * parameters * kFloat;
  estimate.sync = parameters * kFloat;
  estimate.activations = activations * kFloat;
  if (spec.dataset().name() == "fashion-mnist") {
    estimate.data = kFashionMnistImages * (kFashionMnistPixels + 1) * kFloat;
  } else if (model.kind() == "mlp") {
    estimate.data = batch * (input_width + 1) * kFloat;
  }
  return estimate;
}

}  // namespace gradsync
