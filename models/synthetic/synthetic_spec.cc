#include "models/synthetic/synthetic_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/job_spec.h"
#include "study/model_profiles.h"

namespace gradsync {

absl::StatusOr<std::vector<int64_t>> SyntheticTensorFloats(
    const ModelSpec& model) {
  if (model.profile().empty())
    return std::vector<int64_t>{model.synthetic_floats()};
  ASSIGN_OR_RETURN(std::vector<ProfileTensor> tensors,
                   ModelProfile(model.profile()));
  const double scale = model.profile_scale() == 0 ? 1 : model.profile_scale();
  ASSIGN_OR_RETURN(std::vector<size_t> floats,
                   ScaledLayerFloats(tensors, scale));
  return std::vector<int64_t>(floats.begin(), floats.end());
}

absl::StatusOr<int64_t> ProfileFloats(const ModelSpec& model) {
  if (model.profile().empty()) {
    return absl::InvalidArgumentError("the model has no profile");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> floats, SyntheticTensorFloats(model));
  int64_t total = 0;
  for (int64_t f : floats) total += f;
  return total;
}

absl::Status ValidateSyntheticModel(const JobSpec& spec, JobSpec* out) {
  const ModelSpec& model = spec.model();
  if (!model.profile().empty()) {
    absl::StatusOr<int64_t> floats = ProfileFloats(model);
    if (!floats.ok())
      return InvalidSpecField("model.profile", floats.status().message());
    if (model.synthetic_floats() != 0 && model.synthetic_floats() != *floats) {
      return InvalidSpecField(
          "model.syntheticFloats",
          absl::StrCat("is ", model.synthetic_floats(), " but ",
                       model.profile(), " at scale ", model.profile_scale(),
                       " has ", *floats, "; leave it 0"));
    }
    if (*floats > kMaxModelParameters) {
      return InvalidSpecField(
          "model.profileScale",
          absl::StrCat("makes ", *floats, " parameters; at most ",
                       kMaxModelParameters));
    }
    out->mutable_model()->set_synthetic_floats(*floats);
  } else if (model.synthetic_floats() <= 0 ||
             model.synthetic_floats() > kMaxModelParameters) {
    return InvalidSpecField(
        "model.syntheticFloats",
        absl::StrCat("is ", model.synthetic_floats(), "; it must be in 1..",
                     kMaxModelParameters));
  }
  if (spec.steps() == 0 && spec.epochs() > 0) {
    return InvalidSpecField(
        "epochs",
        absl::StrCat("is ", spec.epochs(),
                     " with steps 0, but the synthetic model has no dataset "
                     "to count epochs over; set steps"));
  }
  if (!(model.synthetic_compute_ms() >= 0) ||
      !std::isfinite(model.synthetic_compute_ms())) {
    return InvalidSpecField("model.syntheticComputeMs",
                            absl::StrCat("is ", model.synthetic_compute_ms(),
                                         "; it must be a finite number >= 0"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> SyntheticParameterLayout(const ModelSpec& model) {
  absl::StatusOr<std::vector<int64_t>> floats = SyntheticTensorFloats(model);
  return floats.ok() ? *std::move(floats)
                     : std::vector<int64_t>{model.synthetic_floats()};
}

std::string DescribeSynthetic(const ModelSpec& model) {
  std::string out = absl::StrCat(model.synthetic_floats(), " floats, ",
                                 model.synthetic_compute_ms(), " ms compute");
  if (!model.profile().empty())
    absl::StrAppend(&out, " (", model.profile(), ")");
  return out;
}

}  // namespace gradsync
