#include "jobspec/grad_dtype.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<DataType> ParseGradDtype(absl::string_view name) {
  if (name.empty()) return DataType::kFloat32;
  absl::StatusOr<DataType> type = ParseDataType(name);
  if (type.ok() &&
      (*type == DataType::kFloat32 || *type == DataType::kBFloat16 ||
       *type == DataType::kFloat16)) {
    return *type;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("job spec field gradDtype is '", name,
                   "'; use fp32 (the default), bf16 or fp16"));
}

std::string GradDtypeName(DataType type) {
  switch (type) {
    case DataType::kBFloat16:
      return "bf16";
    case DataType::kFloat16:
      return "fp16";
    default:
      return "fp32";
  }
}

bool SpecUsesPs(const JobSpec& spec) {
  if (spec.mode() == SYNC_MODE_PS || spec.auto_mode().enabled()) return true;
  return std::any_of(
      spec.switches().begin(), spec.switches().end(),
      [](const SwitchSpec& s) { return s.mode() == SYNC_MODE_PS; });
}

absl::Status ValidateGradDtype(const JobSpec& spec, bool nccl_ring) {
  absl::StatusOr<DataType> type = ParseGradDtype(spec.grad_dtype());
  if (!type.ok()) return type.status();
  if (*type == DataType::kFloat32) return absl::OkStatus();
  // The parameter server takes 16-bit gradients too (CreateShardRequest.
  // wire_dtype), so a PS, auto or switching job is fine.
  if (nccl_ring) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job spec field gradDtype is '", spec.grad_dtype(),
        "', but the job's ring runs on NCCL, which has no 16-bit gradient "
        "path yet; set ringBackend \"tcp\", or use fp32"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
