#include "models/synthetic/synthetic_builder.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "study/model_profiles.h"
#include "worker/model/synthetic.h"

namespace gradsync {
namespace {

// Granularity at which the synthetic backward reports ready ranges, like
// layers of 1 MiB.
constexpr size_t kSyntheticChunkFloats = size_t{1} << 18;

class SyntheticModel final : public TrainModel {
 public:
  SyntheticModel(SyntheticWorkload work, int rank, std::vector<float> params,
                 std::vector<float> grads)
      : work_(work),
        rank_(rank),
        params_(std::move(params)),
        grads_(std::move(grads)) {}

  absl::Span<float> params() override { return absl::MakeSpan(params_); }
  absl::Span<float> grads() override { return absl::MakeSpan(grads_); }
  bool uses_data() const override { return false; }

  [[nodiscard]] absl::StatusOr<PassStats> ForwardBackward(
      const Batch& batch, int64_t step, GradMode mode, size_t loss_normalizer,
      const GradReadyCallback& ready) override {
    RETURN_IF_ERROR(work_.Backward(static_cast<uint64_t>(rank_),
                                   static_cast<uint64_t>(step),
                                   absl::MakeSpan(grads_), mode, ready));
    PassStats s;
    s.count = batch.size();
    return s;
  }

  [[nodiscard]] absl::StatusOr<PassStats> Evaluate(const Dataset& data,
                                                   size_t begin,
                                                   size_t end) override {
    return absl::FailedPreconditionError(
        "the synthetic model has nothing to evaluate");
  }

 private:
  SyntheticWorkload work_;
  const int rank_;
  std::vector<float> params_;
  std::vector<float> grads_;
};

}  // namespace

absl::Status ConfigureSynthetic(const ModelSpec& model, TrainerConfig* config) {
  config->synthetic_floats = static_cast<size_t>(model.synthetic_floats());
  config->synthetic_compute =
      absl::Microseconds(std::llround(model.synthetic_compute_ms() * 1000));
  if (model.profile().empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<ProfileTensor>> tensors =
      ModelProfile(model.profile());
  if (!tensors.ok())
    return InvalidTrainerConfigField("model.profile",
                                     tensors.status().message());
  absl::StatusOr<std::vector<size_t>> layers = ScaledLayerFloats(
      *tensors, model.profile_scale() == 0 ? 1 : model.profile_scale());
  if (!layers.ok()) {
    return InvalidTrainerConfigField("model.profileScale",
                                     layers.status().message());
  }
  config->synthetic_layers = *std::move(layers);
  config->synthetic_layer_cost.clear();
  for (const ProfileTensor& t : *tensors) {
    config->synthetic_layer_cost.push_back(t.flops);
  }
  return absl::OkStatus();
}

absl::Status ValidateSyntheticConfig(const TrainerConfig& config) {
  if (config.synthetic_floats == 0) {
    return InvalidTrainerConfigField("model.syntheticFloats",
                                     "is 0; it must be > 0");
  }
  if (config.synthetic_compute < absl::ZeroDuration() ||
      config.synthetic_compute == absl::InfiniteDuration()) {
    return InvalidTrainerConfigField("model.syntheticComputeMs",
                                     "must be finite and >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TrainModel>> CreateSyntheticModel(
    const TrainerConfig& config, int rank) {
  SyntheticConfig sc;
  sc.num_floats = config.synthetic_floats;
  sc.chunk_floats = kSyntheticChunkFloats;
  sc.layer_floats = config.synthetic_layers;
  sc.layer_cost = config.synthetic_layer_cost;
  sc.compute_time =
      config.synthetic_compute / std::max(1, config.grad_accumulation_steps);
  sc.wait = EmulatedWait::kSleep;
  ASSIGN_OR_RETURN(SyntheticWorkload work, SyntheticWorkload::Create(sc));
  std::vector<float> params, grads;
  try {
    params.assign(config.synthetic_floats, 0.0f);
    grads.assign(config.synthetic_floats, 0.0f);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate the synthetic model's ",
                     config.synthetic_floats, " parameters and gradients"));
  }
  return std::unique_ptr<TrainModel>(
      new SyntheticModel(work, rank, std::move(params), std::move(grads)));
}

}  // namespace gradsync
