// JobSpec.auto_mode: the settings of a job submitted with `--mode auto`,
// with their defaults. The coordinator checks them at submit (job_spec.h)
// and builds its policy from them (server/coordinator/auto_mode.h).
//
//   ASSIGN_OR_RETURN(AutoModeConfig config,
//                    AutoModeConfigFromSpec(spec.auto_mode()));
//
// Errors: INVALID_ARGUMENT naming the field (by its JSON name). Pure
// functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_AUTO_MODE_SPEC_H_
#define GRADSYNC_JOBSPEC_AUTO_MODE_SPEC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace gradsync {

struct AutoModeConfig {
  int settle_steps = 2;
  int probe_steps = 5;
  int64_t recheck_every = 200;  // 0: never re-measure on a schedule
  double change_threshold = 0.25;
};

// JobSpec.auto_mode with defaults filled in; INVALID_ARGUMENT naming the
// field for negative counts or a threshold outside (0, 10].
[[nodiscard]] absl::StatusOr<AutoModeConfig> AutoModeConfigFromSpec(
    const AutoModeSpec& spec);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_AUTO_MODE_SPEC_H_
