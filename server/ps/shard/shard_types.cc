#include "server/ps/shard/shard_types.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

const char* UpdateModeName(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kSync:
      return "sync";
    case UpdateMode::kAsync:
      return "async";
    case UpdateMode::kStaleSync:
      return "ssp";
  }
  return "invalid";
}

absl::Status ValidatePsShardConfig(const PsShardConfig& config) {
  if (config.job_id.empty()) {
    return absl::InvalidArgumentError("a shard needs a job id");
  }
  if (config.shard < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard index ", config.shard, " is negative"));
  }
  if (config.begin >= config.end) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard range [", config.begin, ", ", config.end,
                     ") is empty; a shard owns at least one element"));
  }
  if (config.num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_workers is ", config.num_workers, "; it must be at least 1"));
  }
  if (config.mode != UpdateMode::kSync && config.mode != UpdateMode::kAsync &&
      config.mode != UpdateMode::kStaleSync) {
    return absl::InvalidArgumentError("unknown update mode");
  }
  if (config.staleness < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("staleness is ", config.staleness, "; it must be >= 0"));
  }
  if (config.first_step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("first_step is ", config.first_step, "; it must be >= 0"));
  }
  if (config.wire_dtype != DataType::kFloat32 &&
      config.wire_dtype != DataType::kBFloat16 &&
      config.wire_dtype != DataType::kFloat16) {
    return absl::InvalidArgumentError(
        "the gradient wire type must be fp32, bf16 or fp16");
  }
  if (config.max_wait <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_wait must be positive");
  }
  return ValidateOptimizerConfig(config.optimizer);
}

}  // namespace gradsync
