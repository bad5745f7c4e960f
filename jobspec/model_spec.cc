#include "jobspec/model_spec.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/job_spec.h"

namespace gradsync {

namespace {

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

absl::Status ValidateTrainedModel(const JobSpec& spec,
                                  const ModelKindSpec& kind, JobSpec* out_ptr) {
  JobSpec& out = *out_ptr;
  if (spec.dataset().name() != "fashion-mnist" &&
      spec.dataset().name() != "synthetic") {
    return InvalidSpecField(
        "dataset.name",
        absl::StrCat("is '", spec.dataset().name(),
                     "'; use \"fashion-mnist\" or \"synthetic\""));
  }
  RETURN_IF_ERROR(kind.validate(spec, &out));
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
