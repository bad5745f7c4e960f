// ModelBuilder: a model kind's worker part (model_kind_spec.h has its spec
// part): how a worker reads the kind's fields of a checked spec into the
// trainer's config, checks them, which examples the model reads, and how
// it builds one rank's TrainModel (worker/train/train_model.h).
//
// A kind gradsync's trainer runs defines one ModelBuilder in its folder
// (models/<kind>/<kind>_builder.h) and registers it with one line in
// models/model_builders.cc.
//
//   const ModelBuilder* builder = FindModelBuilder(config.model);
//   ASSIGN_OR_RETURN(std::unique_ptr<TrainModel> model,
//                    builder->create(config, rank));
//
// The functions are thread-safe (they touch only their arguments); a
// kind's instance is a constant.
#ifndef GRADSYNC_MODELS_MODEL_BUILDER_H_
#define GRADSYNC_MODELS_MODEL_BUILDER_H_

#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/job.pb.h"
#include "worker/train/train_config.h"
#include "worker/train/train_model.h"

namespace gradsync {

// The examples a model reads: features per example and classes.
struct DataShape {
  size_t features = 0;
  size_t classes = 0;
};

// INVALID_ARGUMENT "training config field <field> <problem>": how the
// trainer's config checks (ValidateTrainerConfig and each builder's
// validate) name what they refuse.
[[nodiscard]] absl::Status InvalidTrainerConfigField(absl::string_view field,
                                                     absl::string_view problem);

struct ModelBuilder {
  // JobSpec.model.kind, as in the kind's ModelKindSpec.
  absl::string_view kind;

  // Reads the kind's fields of a checked spec's model into `config` (the
  // kind's own TrainerConfig fields, or config->model_spec alone).
  // INVALID_ARGUMENT naming the field. Required.
  absl::Status (*configure)(const ModelSpec& model,
                            TrainerConfig* config) = nullptr;

  // The kind's part of ValidateTrainerConfig: INVALID_ARGUMENT "training
  // config field <field> ...". Null: nothing to check.
  absl::Status (*validate)(const TrainerConfig& config) = nullptr;

  // The examples the model reads, which the job's dataset must match.
  // Null: it reads none (its passes make their own gradients), and the
  // job must count steps, not epochs.
  DataShape (*data_shape)(const TrainerConfig& config) = nullptr;

  // Rank `rank`'s model with its initial parameters, a pure function of
  // config.seed (identical on every rank). Required.
  absl::StatusOr<std::unique_ptr<TrainModel>> (*create)(
      const TrainerConfig& config, int rank) = nullptr;
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MODEL_BUILDER_H_
