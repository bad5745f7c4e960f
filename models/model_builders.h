// The model builders of this build (model_builder.h), registered in
// model_builders.cc, one line each: the kinds gradsync's trainer runs.
//
// Pure functions over constants; thread-safe.
#ifndef GRADSYNC_MODELS_MODEL_BUILDERS_H_
#define GRADSYNC_MODELS_MODEL_BUILDERS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/model_builder.h"

namespace gradsync {

// The builder of `kind`: INVALID_ARGUMENT "training config field
// model.kind is '<kind>'; the trainer runs ..." for a kind without one (an
// entrypoint or a link probe has a runner of its own, and an unknown kind
// none).
[[nodiscard]] absl::StatusOr<const ModelBuilder*> FindModelBuilder(
    absl::string_view kind);

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MODEL_BUILDERS_H_
