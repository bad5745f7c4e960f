#include "worker/train/train_model.h"

#include "common/status_macros.h"
#include "models/model_builders.h"

namespace gradsync {
absl::StatusOr<std::unique_ptr<DeviceRing>> TrainModel::StartDeviceRing(
    DeviceRingOptions options) {
  return absl::FailedPreconditionError(
      "the NCCL ring needs an mlp on a CUDA device; this rank's model keeps "
      "its parameters in host memory (use ringBackend \"tcp\")");
}

absl::StatusOr<std::unique_ptr<TrainModel>> CreateTrainModel(
    const TrainerConfig& config, int rank) {
  ASSIGN_OR_RETURN(const ModelBuilder* builder, FindModelBuilder(config.model));
  return builder->create(config, rank);
}

}  // namespace gradsync
