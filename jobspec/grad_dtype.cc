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

}  // namespace gradsync
