// The synthetic model kind's spec part (model_kind_spec.h): a flat
// gradient of model.synthetic_floats elements, or the parameter tensors of
// a published network (model.profile at model.profile_scale), made with
// emulated compute (model.synthetic_compute_ms) for communication studies.
// It stays on the host. Its builder is models/synthetic/synthetic_builder.h.
#ifndef GRADSYNC_MODELS_SYNTHETIC_SYNTHETIC_SPEC_H_
#define GRADSYNC_MODELS_SYNTHETIC_SYNTHETIC_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/model_kind_spec.h"
#include "proto/job.pb.h"

namespace gradsync {

// A profile's scaled tensor sizes (study/model_profiles.h); without a
// profile, one tensor of synthetic_floats. INVALID_ARGUMENT for an unknown
// profile or a scale outside (0, 1].
[[nodiscard]] absl::StatusOr<std::vector<int64_t>> SyntheticTensorFloats(
    const ModelSpec& model);

// The synthetic gradient's length for model.profile at model.profile_scale.
// INVALID_ARGUMENT as SyntheticTensorFloats.
[[nodiscard]] absl::StatusOr<int64_t> ProfileFloats(const ModelSpec& model);

// syntheticFloats in 1..kMaxModelParameters, or a known profile whose
// scaled total it equals (or 0: filled in); syntheticComputeMs finite and
// >= 0.
[[nodiscard]] absl::Status ValidateSyntheticModel(const JobSpec& spec,
                                                  JobSpec* out);
// SyntheticTensorFloats of a validated model.
std::vector<int64_t> SyntheticParameterLayout(const ModelSpec& model);
// "25557032 floats, 120 ms compute (resnet50)".
std::string DescribeSynthetic(const ModelSpec& model);

inline constexpr ModelKindSpec kSyntheticModelKindSpec = {
    /*kind=*/"synthetic",
    /*summary=*/
    "a synthetic gradient with emulated compute (syntheticFloats or profile)",
    ModelKindSpec::Runner::kTrainer,
    /*runs_on_cuda=*/false,
    ValidateSyntheticModel,
    SyntheticParameterLayout,
    /*activation_floats=*/nullptr,
    /*input_floats=*/nullptr,
    DescribeSynthetic,
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_SYNTHETIC_SYNTHETIC_SPEC_H_
