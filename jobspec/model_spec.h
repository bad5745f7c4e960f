// The parts of ValidateJobSpec (job_spec.h) about what a job trains: the
// built-in models (mlp, synthetic) with their dataset, batch and length,
// and the optimizer. job_spec.cc calls them in turn; they are apart so
// that each file stays readable.
//
// Errors: INVALID_ARGUMENT naming the first bad field by its JSON name
// (InvalidSpecField). Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_MODEL_SPEC_H_
#define GRADSYNC_JOBSPEC_MODEL_SPEC_H_

#include "absl/status/status.h"
#include "proto/job.pb.h"

namespace gradsync {

// The model, data, batch and length of a job of gradsync's own models
// (mlp, synthetic); `out` (a copy of `spec`) gets their defaults.
[[nodiscard]] absl::Status ValidateBuiltInModel(const JobSpec& spec,
                                                JobSpec* out);

// The optimizer's name and hyper-parameters, in the ranges of the
// optimizer the ranks build (common/optimizer.h); fills the defaults of
// its kind (momentum 0.9, Adam betas 0.9/0.999 and epsilon 1e-8).
[[nodiscard]] absl::Status ValidateOptimizerSpec(OptimizerSpec* optimizer);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_MODEL_SPEC_H_
