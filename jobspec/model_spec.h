// The part of ValidateJobSpec (job_spec.h) about what a job of gradsync's
// own models trains: the model (mlp, synthetic) with its dataset, batch
// and length. job_spec.cc calls it; it is apart so that each file stays
// readable. The optimizer's part is optimizer_spec.h.
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

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_MODEL_SPEC_H_
