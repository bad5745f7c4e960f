#include "jobspec/model_spec.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "jobspec/job_spec.h"
#include "study/model_profiles.h"

namespace gradsync {

absl::StatusOr<int64_t> ProfileFloats(const ModelSpec& model) {
  ASSIGN_OR_RETURN(std::vector<ProfileTensor> tensors,
                   ModelProfile(model.profile()));
  const double scale = model.profile_scale() == 0 ? 1 : model.profile_scale();
  ASSIGN_OR_RETURN(std::vector<size_t> floats,
                   ScaledLayerFloats(tensors, scale));
  int64_t total = 0;
  for (size_t f : floats) total += static_cast<int64_t>(f);
  return total;
}

namespace {

[[nodiscard]] absl::Status ValidateModel(const JobSpec& spec) {
  const ModelSpec& model = spec.model();
  if (!model.profile().empty() && model.kind() != "synthetic") {
    return InvalidSpecField(
        "model.profile",
        absl::StrCat("is '", model.profile(), "' but model.kind is '",
                     model.kind(), "'; a profile shapes the synthetic model"));
  }
  if (model.kind() == "mlp") {
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
  if (model.kind() == "synthetic") {
    if (!model.profile().empty()) {
      absl::StatusOr<int64_t> floats = ProfileFloats(model);
      if (!floats.ok())
        return InvalidSpecField("model.profile", floats.status().message());
      if (model.synthetic_floats() != 0 &&
          model.synthetic_floats() != *floats) {
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
    } else if (model.synthetic_floats() <= 0 ||
               model.synthetic_floats() > kMaxModelParameters) {
      return InvalidSpecField(
          "model.syntheticFloats",
          absl::StrCat("is ", model.synthetic_floats(), "; it must be in 1..",
                       kMaxModelParameters));
    }
    if (!(model.synthetic_compute_ms() >= 0) ||
        !std::isfinite(model.synthetic_compute_ms())) {
      return InvalidSpecField(
          "model.syntheticComputeMs",
          absl::StrCat("is ", model.synthetic_compute_ms(),
                       "; it must be a finite number >= 0"));
    }
    return absl::OkStatus();
  }
  return InvalidSpecField("model.kind",
                          absl::StrCat("is '", model.kind(),
                                       "'; use \"mlp\", \"synthetic\" or "
                                       "\"entrypoint\""));
}

// With steps 0 the job runs `epochs` passes over the dataset: that many
// steps must be at least one, and countable.
[[nodiscard]] absl::Status ValidateEpochs(const JobSpec& spec) {
  // (A synthetic dataset has no epochs; the worker says so.)
  if (spec.steps() != 0 || spec.epochs() == 0 ||
      spec.dataset().name() != "fashion-mnist") {
    return absl::OkStatus();
  }
  // The workers drop the last partial batch (worker/data/batcher.h).
  const int64_t per_epoch = kFashionMnistTrainExamples / spec.batch_size();
  const double steps =
      std::ceil(spec.epochs() * static_cast<double>(per_epoch));
  if (!(steps >= 1)) {
    return InvalidSpecField(
        "epochs",
        absl::StrCat("is ", spec.epochs(), " at batchSize ", spec.batch_size(),
                     " (", per_epoch, " steps per epoch of ",
                     kFashionMnistTrainExamples,
                     " examples): not one step; raise epochs or "
                     "lower batchSize"));
  }
  if (!(steps <= static_cast<double>(kMaxSteps))) {
    return InvalidSpecField(
        "epochs",
        absl::StrCat("is ", spec.epochs(), ", ", steps, " steps at batchSize ",
                     spec.batch_size(), "; at most ", kMaxSteps, " steps"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateBuiltInModel(const JobSpec& spec, JobSpec* out_ptr) {
  JobSpec& out = *out_ptr;
  if (spec.dataset().name() != "fashion-mnist" &&
      spec.dataset().name() != "synthetic") {
    return InvalidSpecField(
        "dataset.name",
        absl::StrCat("is '", spec.dataset().name(),
                     "'; use \"fashion-mnist\" or \"synthetic\""));
  }
  RETURN_IF_ERROR(ValidateModel(spec));
  if (!spec.model().profile().empty() && spec.model().synthetic_floats() == 0) {
    ASSIGN_OR_RETURN(const int64_t floats, ProfileFloats(spec.model()));
    out.mutable_model()->set_synthetic_floats(floats);
  }
  RETURN_IF_ERROR(ValidateNumWorkers(spec, "one rank per device"));
  RETURN_IF_ERROR(NonNegativeSpecField("gradAccumulationSteps",
                                       spec.grad_accumulation_steps()));
  if (out.grad_accumulation_steps() == 0) out.set_grad_accumulation_steps(1);
  const int64_t min_batch =
      int64_t{spec.num_workers()} * out.grad_accumulation_steps();
  if (spec.batch_size() < min_batch) {
    return InvalidSpecField(
        "batchSize",
        absl::StrCat("is ", spec.batch_size(),
                     "; it is the global batch, "
                     "split over numWorkers (",
                     spec.num_workers(), ") and gradAccumulationSteps (",
                     out.grad_accumulation_steps(),
                     "), so it must be >= ", min_batch));
  }
  RETURN_IF_ERROR(NonNegativeSpecField("steps", spec.steps()));
  if (!(spec.epochs() >= 0) || !std::isfinite(spec.epochs())) {
    return InvalidSpecField("epochs",
                            absl::StrCat("is ", spec.epochs(),
                                         "; it must be a finite number >= 0"));
  }
  if (spec.steps() == 0 && spec.epochs() == 0) {
    return InvalidSpecField("steps",
                            "and epochs are both 0; set steps (or epochs) > 0");
  }
  RETURN_IF_ERROR(ValidateEpochs(spec));
  return absl::OkStatus();
}

}  // namespace gradsync
