#include "models/model_builders.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "models/mlp/mlp_builder.h"
#include "models/synthetic/synthetic_builder.h"

namespace gradsync {
namespace {

// The registry: one line per kind that gradsync's trainer runs. Its spec
// part registers in model_kinds.cc.
constexpr const ModelBuilder* kModelBuilders[] = {
    &kMlpModelBuilder,
    &kSyntheticModelBuilder,
};

}  // namespace

absl::Status InvalidTrainerConfigField(absl::string_view field,
                                       absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("training config field ", field, " ", problem));
}

absl::StatusOr<const ModelBuilder*> FindModelBuilder(absl::string_view kind) {
  for (const ModelBuilder* builder : kModelBuilders) {
    if (builder->kind == kind) return builder;
  }
  std::string kinds;
  for (const ModelBuilder* builder : kModelBuilders) {
    absl::StrAppend(&kinds, kinds.empty() ? "" : " or ", "\"", builder->kind,
                    "\"");
  }
  return InvalidTrainerConfigField(
      "model.kind", absl::StrCat("is '", kind, "'; the trainer runs ", kinds));
}

}  // namespace gradsync
