#include "jobspec/auto_mode_spec.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<AutoModeConfig> AutoModeConfigFromSpec(
    const AutoModeSpec& spec) {
  AutoModeConfig config;
  if (spec.settle_steps() < 0 || spec.probe_steps() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "autoMode.settleSteps and autoMode.probeSteps must be >= 0 (0: the "
        "defaults 2 and 5); got ",
        spec.settle_steps(), " and ", spec.probe_steps()));
  }
  if (spec.recheck_every() < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("autoMode.recheckEvery is ", spec.recheck_every(),
                     "; use a step count, 0 (200) or -1 (never)"));
  }
  if (spec.change_threshold() < 0 || spec.change_threshold() > 10 ||
      std::isnan(spec.change_threshold())) {
    return absl::InvalidArgumentError(
        absl::StrCat("autoMode.changeThreshold is ", spec.change_threshold(),
                     "; use a share of the step time in (0, 10] (0: 0.25)"));
  }
  if (spec.settle_steps() > 0) config.settle_steps = spec.settle_steps();
  if (spec.probe_steps() > 0) config.probe_steps = spec.probe_steps();
  if (spec.recheck_every() != 0) {
    config.recheck_every = spec.recheck_every() < 0 ? 0 : spec.recheck_every();
  }
  if (spec.change_threshold() > 0) {
    config.change_threshold = spec.change_threshold();
  }
  return config;
}

}  // namespace gradsync
