#include "jobspec/optimizer_spec.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/job_spec.h"

namespace gradsync {
namespace {

double OrDefault(double value, double fallback) {
  return value == 0 ? fallback : value;
}

}  // namespace

absl::StatusOr<OptimizerConfig> OptimizerConfigFromSpec(
    const OptimizerSpec& optimizer) {
  absl::StatusOr<OptimizerKind> kind = ParseOptimizerKind(optimizer.name());
  if (!kind.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.name is '", optimizer.name(),
                     "'; use \"sgd\", \"momentum\", \"adam\", \"adamw\" or "
                     "\"sum\""));
  }
  OptimizerConfig config;
  config.kind = *kind;
  config.lr = optimizer.learning_rate();
  config.weight_decay = optimizer.weight_decay();
  config.nesterov = optimizer.nesterov();
  if (config.kind == OptimizerKind::kMomentum) {
    config.momentum = OrDefault(optimizer.momentum(), kDefaultMomentum);
  }
  if (config.kind == OptimizerKind::kAdam ||
      config.kind == OptimizerKind::kAdamW) {
    config.beta1 = OrDefault(optimizer.beta1(), kDefaultAdamBeta1);
    config.beta2 = OrDefault(optimizer.beta2(), kDefaultAdamBeta2);
    config.eps = OrDefault(optimizer.epsilon(), kDefaultAdamEpsilon);
  }
  return config;
}

absl::Status ValidateOptimizerSpec(OptimizerSpec* optimizer) {
  const std::string& name = optimizer->name();
  if (name != "sgd" && name != "momentum" && name != "adam" &&
      name != "adamw") {
    return InvalidSpecField(
        "optimizer.name",
        absl::StrCat("is '", name,
                     "'; use \"sgd\", \"momentum\", \"adam\" or "
                     "\"adamw\""));
  }
  if (!(optimizer->learning_rate() > 0) ||
      !std::isfinite(optimizer->learning_rate())) {
    return InvalidSpecField("optimizer.learningRate",
                            absl::StrCat("is ", optimizer->learning_rate(),
                                         "; it must be a finite number > 0"));
  }
  if (name == "momentum" && optimizer->momentum() == 0) {
    optimizer->set_momentum(kDefaultMomentum);
  }
  if (name == "adam" || name == "adamw") {
    if (optimizer->beta1() == 0) optimizer->set_beta1(kDefaultAdamBeta1);
    if (optimizer->beta2() == 0) optimizer->set_beta2(kDefaultAdamBeta2);
    if (optimizer->epsilon() == 0) optimizer->set_epsilon(kDefaultAdamEpsilon);
  }
  // The ranges are those of the optimizer the ranks will build.
  ASSIGN_OR_RETURN(const OptimizerConfig config,
                   OptimizerConfigFromSpec(*optimizer));
  absl::Status status = ValidateOptimizerConfig(config);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec field optimizer: ", status.message()));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
