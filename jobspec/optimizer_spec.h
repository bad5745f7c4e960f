// JobSpec.optimizer: what the coordinator accepts (ValidateOptimizerSpec,
// part of ValidateJobSpec) and the optimizer it stands for
// (OptimizerConfigFromSpec), which the ranks of a ring job and the shards
// of a PS job both build. One set of defaults for all of them: unset
// momentum 0.9, Adam betas 0.9 and 0.999, epsilon 1e-8 (job_spec.h's
// kDefault*, OptimizerConfig's own).
//
//   ASSIGN_OR_RETURN(OptimizerConfig config,
//                    OptimizerConfigFromSpec(spec.optimizer()));
//
// Errors: INVALID_ARGUMENT naming the field. Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_OPTIMIZER_SPEC_H_
#define GRADSYNC_JOBSPEC_OPTIMIZER_SPEC_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/optimizer.h"
#include "proto/job.pb.h"

namespace gradsync {

// The optimizer's name ("sgd", "momentum", "adam" or "adamw") and
// hyper-parameters, in the ranges of the optimizer the ranks build
// (common/optimizer.h); fills the defaults of its kind into `optimizer`.
// INVALID_ARGUMENT "job spec field optimizer..." otherwise.
[[nodiscard]] absl::Status ValidateOptimizerSpec(OptimizerSpec* optimizer);

// The optimizer `optimizer` stands for: its kind (any ParseOptimizerKind
// knows, the torch PS path's "sum" included), learning rate, weight decay
// and Nesterov flag, and the hyper-parameters of its kind, the defaults
// for those left at 0; the others keep OptimizerConfig's defaults. Does
// not check the ranges (ValidateOptimizerConfig does). INVALID_ARGUMENT
// "optimizer.name is ..." for a name no optimizer has.
[[nodiscard]] absl::StatusOr<OptimizerConfig> OptimizerConfigFromSpec(
    const OptimizerSpec& optimizer);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_OPTIMIZER_SPEC_H_
