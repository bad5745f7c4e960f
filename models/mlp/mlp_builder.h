// The mlp model kind's builder (models/model_builder.h): TrainerConfig's
// layer_sizes from the spec, and each rank's model: the CPU Mlp
// (worker/model/mlp.h), or the CUDA MLP (cuda_train_model.h) when the
// rank's cuda_device >= 0. Its spec part is mlp_spec.h.
//
// Errors (create): those of Mlp / CudaTrainModel (RESOURCE_EXHAUSTED when
// buffers cannot be allocated, FAILED_PRECONDITION "cuda:<d>: ... no CUDA
// device visible" on a host without that GPU); FAILED_PRECONDITION for a
// CUDA rank on a worker built without CUDA kernels.
#ifndef GRADSYNC_MODELS_MLP_MLP_BUILDER_H_
#define GRADSYNC_MODELS_MLP_MLP_BUILDER_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/model_builder.h"

namespace gradsync {

[[nodiscard]] absl::Status ConfigureMlp(const ModelSpec& model,
                                        TrainerConfig* config);
[[nodiscard]] absl::Status ValidateMlpConfig(const TrainerConfig& config);
// layer_sizes' first (features) and last (classes).
DataShape MlpDataShape(const TrainerConfig& config);
[[nodiscard]] absl::StatusOr<std::unique_ptr<TrainModel>> CreateMlpModel(
    const TrainerConfig& config, int rank);

inline constexpr ModelBuilder kMlpModelBuilder = {
    /*kind=*/"mlp", ConfigureMlp,   ValidateMlpConfig,
    MlpDataShape,   CreateMlpModel,
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MLP_MLP_BUILDER_H_
