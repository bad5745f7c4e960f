#include "models/mlp/mlp_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jobspec/job_spec.h"

namespace gradsync {

absl::Status ValidateMlpModel(const JobSpec& spec, JobSpec* out) {
  const ModelSpec& model = spec.model();
  if (!model.profile().empty()) {
    return InvalidSpecField(
        "model.profile",
        absl::StrCat("is '", model.profile(), "' but model.kind is '",
                     model.kind(), "'; a profile shapes the synthetic model"));
  }
  if (model.layer_sizes_size() < 2) {
    return InvalidSpecField(
        "model.layerSizes",
        absl::StrCat("has ", model.layer_sizes_size(),
                     " entries; an mlp needs at least 2 (input "
                     "width first, classes last), e.g. "
                     "[784, 256, 10]"));
  }
  int64_t parameters = 0;
  for (int i = 0; i < model.layer_sizes_size(); ++i) {
    const int64_t width = model.layer_sizes(i);
    if (width <= 0 || width > kMaxLayerWidth) {
      return InvalidSpecField(
          absl::StrCat("model.layerSizes[", i, "]"),
          absl::StrCat("is ", width, "; widths must be in 1..",
                       kMaxLayerWidth));
    }
    if (i > 0) parameters += (model.layer_sizes(i - 1) + 1) * width;
    if (parameters > kMaxModelParameters) {
      return InvalidSpecField(
          "model.layerSizes",
          absl::StrCat("[", absl::StrJoin(model.layer_sizes(), ", "),
                       "] gives more than ", kMaxModelParameters,
                       " parameters; use narrower layers"));
    }
  }
  if (spec.dataset().name() == "fashion-mnist" &&
      (model.layer_sizes(0) != kFashionMnistFeatures ||
       model.layer_sizes(model.layer_sizes_size() - 1) !=
           kFashionMnistClasses)) {
    return InvalidSpecField(
        "model.layerSizes",
        absl::StrCat("is [", absl::StrJoin(model.layer_sizes(), ", "),
                     "]; fashion-mnist needs ", kFashionMnistFeatures,
                     " inputs first and ", kFashionMnistClasses,
                     " classes last"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> MlpParameterLayout(const ModelSpec& model) {
  std::vector<int64_t> layout;
  for (int i = 1; i < model.layer_sizes_size(); ++i) {
    layout.push_back(model.layer_sizes(i - 1) * model.layer_sizes(i));
    layout.push_back(model.layer_sizes(i));
  }
  return layout;
}

int64_t MlpActivationFloats(const ModelSpec& model, int64_t batch) {
  int64_t widest = 0;
  int64_t outputs = 0;
  for (int64_t width : model.layer_sizes()) {
    widest = std::max(widest, width);
    outputs += width;
  }
  return batch * (outputs + 2 * widest);
}

int64_t MlpInputFloats(const ModelSpec& model) {
  return model.layer_sizes_size() > 0 ? model.layer_sizes(0) : 0;
}

std::string DescribeMlp(const ModelSpec& model) {
  return absl::StrJoin(model.layer_sizes(), ",");
}

}  // namespace gradsync
