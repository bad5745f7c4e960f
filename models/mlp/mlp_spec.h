// The mlp model kind's spec part (model_kind_spec.h): a multi-layer
// perceptron of JobSpec.model.layer_sizes (input width first, classes
// last), trained by gradsync's trainer on the CPU or a CUDA device. Its
// builder is models/mlp/mlp_builder.h.
#ifndef GRADSYNC_MODELS_MLP_MLP_SPEC_H_
#define GRADSYNC_MODELS_MLP_MLP_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "models/model_kind_spec.h"
#include "proto/job.pb.h"

namespace gradsync {

// layerSizes: at least 2 widths in 1..kMaxLayerWidth, at most
// kMaxModelParameters weights and biases; fashion-mnist's 784 inputs first
// and 10 classes last. No field of another kind (profile).
[[nodiscard]] absl::Status ValidateMlpModel(const JobSpec& spec, JobSpec* out);
// Each layer's weights ([out][in]) and then its biases, in forward order.
std::vector<int64_t> MlpParameterLayout(const ModelSpec& model);
// Every layer's output plus two backward deltas of the widest layer.
int64_t MlpActivationFloats(const ModelSpec& model, int64_t batch);
// The input layer's width.
int64_t MlpInputFloats(const ModelSpec& model);
// "784,256,10".
std::string DescribeMlp(const ModelSpec& model);

inline constexpr ModelKindSpec kMlpModelKindSpec = {
    /*kind=*/"mlp",
    /*summary=*/"a multi-layer perceptron (layerSizes)",
    ModelKindSpec::Runner::kTrainer,
    /*runs_on_cuda=*/true,
    ValidateMlpModel,
    MlpParameterLayout,
    MlpActivationFloats,
    MlpInputFloats,
    DescribeMlp,
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MLP_MLP_SPEC_H_
