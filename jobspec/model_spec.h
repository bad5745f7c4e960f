// The part of ValidateJobSpec (job_spec.h) about what a job that
// gradsync's trainer runs trains: the model, through its kind's validate
// (models/model_kind_spec.h), with its dataset, batch and length.
// job_spec.cc calls it; it is apart so that each file stays readable. The
// optimizer's part is optimizer_spec.h.
//
// Errors: INVALID_ARGUMENT naming the first bad field by its JSON name
// (InvalidSpecField). Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_MODEL_SPEC_H_
#define GRADSYNC_JOBSPEC_MODEL_SPEC_H_

#include "absl/status/status.h"
#include "models/model_kind_spec.h"
#include "proto/job.pb.h"

namespace gradsync {

// The model (of `kind`, a trainer kind), data, batch and length of a job
// gradsync's trainer runs; `out` (a copy of `spec`) gets their defaults.
[[nodiscard]] absl::Status ValidateTrainedModel(const JobSpec& spec,
                                                const ModelKindSpec& kind,
                                                JobSpec* out);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_MODEL_SPEC_H_
