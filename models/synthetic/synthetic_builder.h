// The synthetic model kind's builder (models/model_builder.h): the
// gradient's length, a profile's layers and their compute costs, and the
// emulated compute from the spec; each rank's SyntheticWorkload
// (worker/model/synthetic.h). Its parameters start at zero; its "gradient"
// is SyntheticWorkload::Value(rank, step, i) (small integers, so that sums
// over ranks are exact), produced in config.synthetic_compute per step
// (spread over the micro-batches) with the rank's thread asleep, as an
// accelerator rank would leave its host core free. It reads no data, has
// no loss and no evaluation, and stays on the host on any device. Its spec
// part is synthetic_spec.h.
#ifndef GRADSYNC_MODELS_SYNTHETIC_SYNTHETIC_BUILDER_H_
#define GRADSYNC_MODELS_SYNTHETIC_SYNTHETIC_BUILDER_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/model_builder.h"

namespace gradsync {

[[nodiscard]] absl::Status ConfigureSynthetic(const ModelSpec& model,
                                              TrainerConfig* config);
[[nodiscard]] absl::Status ValidateSyntheticConfig(const TrainerConfig& config);
// RESOURCE_EXHAUSTED when the parameters cannot be allocated.
[[nodiscard]] absl::StatusOr<std::unique_ptr<TrainModel>> CreateSyntheticModel(
    const TrainerConfig& config, int rank);

inline constexpr ModelBuilder kSyntheticModelBuilder = {
    /*kind=*/"synthetic",    ConfigureSynthetic,
    ValidateSyntheticConfig,
    /*data_shape=*/nullptr,  CreateSyntheticModel,
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_SYNTHETIC_SYNTHETIC_BUILDER_H_
