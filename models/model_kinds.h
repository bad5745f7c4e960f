// The model kinds of this build (model_kind_spec.h), registered in
// model_kinds.cc, one line each.
//
//   const ModelKindSpec* kind = FindModelKind(spec.model().kind());
//   if (kind == nullptr) ... "use " + ModelKindChoices()
//
// Pure functions over constants; thread-safe.
#ifndef GRADSYNC_MODELS_MODEL_KINDS_H_
#define GRADSYNC_MODELS_MODEL_KINDS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "models/model_kind_spec.h"

namespace gradsync {

// Every kind, in the order users are told of them.
absl::Span<const ModelKindSpec* const> ModelKinds();

// The kind named `kind`, or nullptr.
const ModelKindSpec* FindModelKind(absl::string_view kind);

// The kinds' names for an error: "\"mlp\", \"synthetic\", ... or \"x\"".
std::string ModelKindChoices();

// Sum of the kind's parameter layout (0 for an unknown kind or one whose
// parameters are not gradsync's).
int64_t ModelParameterCount(const ModelSpec& model);

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MODEL_KINDS_H_
