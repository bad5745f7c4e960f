#include "models/model_kinds.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "models/entrypoint/entrypoint_spec.h"
#include "models/link_probe/link_probe_spec.h"
#include "models/mlp/mlp_spec.h"
#include "models/synthetic/synthetic_spec.h"

namespace gradsync {
namespace {

// The registry: one line per kind. A kind gradsync's trainer runs also
// registers its builder in model_builders.cc.
constexpr const ModelKindSpec* kModelKinds[] = {
    &kMlpModelKindSpec,
    &kSyntheticModelKindSpec,
    &kEntrypointModelKindSpec,
    &kLinkProbeModelKindSpec,
};

}  // namespace

absl::Span<const ModelKindSpec* const> ModelKinds() { return kModelKinds; }

const ModelKindSpec* FindModelKind(absl::string_view kind) {
  for (const ModelKindSpec* spec : kModelKinds) {
    if (spec->kind == kind) return spec;
  }
  return nullptr;
}

std::string ModelKindChoices() {
  std::string out;
  const absl::Span<const ModelKindSpec* const> kinds = ModelKinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) absl::StrAppend(&out, i + 1 == kinds.size() ? " or " : ", ");
    absl::StrAppend(&out, "\"", kinds[i]->kind, "\"");
  }
  return out;
}

int64_t ModelParameterCount(const ModelSpec& model) {
  const ModelKindSpec* kind = FindModelKind(model.kind());
  if (kind == nullptr || kind->parameter_layout == nullptr) return 0;
  int64_t total = 0;
  for (int64_t floats : kind->parameter_layout(model)) total += floats;
  return total;
}

}  // namespace gradsync
