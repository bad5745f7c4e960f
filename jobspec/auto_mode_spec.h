// JobSpec.auto_mode: the settings of a job submitted with `--mode auto`
// (AutoModeConfig, with its defaults: study/auto_mode_policy.h). The
// coordinator checks them at submit (job_spec.h) and builds its policy
// from them.
//
//   ASSIGN_OR_RETURN(AutoModeConfig config,
//                    AutoModeConfigFromSpec(spec.auto_mode()));
//
// Errors: INVALID_ARGUMENT naming the field (by its JSON name). Pure
// functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_AUTO_MODE_SPEC_H_
#define GRADSYNC_JOBSPEC_AUTO_MODE_SPEC_H_

#include "absl/status/statusor.h"
#include "proto/job.pb.h"
#include "study/auto_mode_policy.h"

namespace gradsync {

// JobSpec.auto_mode with defaults filled in; INVALID_ARGUMENT naming the
// field for negative counts or a threshold outside (0, 10].
[[nodiscard]] absl::StatusOr<AutoModeConfig> AutoModeConfigFromSpec(
    const AutoModeSpec& spec);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_AUTO_MODE_SPEC_H_
