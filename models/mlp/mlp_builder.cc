#include "models/mlp/mlp_builder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/mlp.h"
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
#include "models/mlp/cuda_train_model.h"
#endif

namespace gradsync {
namespace {

class MlpModel final : public TrainModel {
 public:
  explicit MlpModel(Mlp mlp) : mlp_(std::move(mlp)) {}

  absl::Span<float> params() override { return mlp_.params(); }
  absl::Span<float> grads() override { return mlp_.grads(); }
  bool uses_data() const override { return true; }

  [[nodiscard]] absl::StatusOr<PassStats> ForwardBackward(
      const Batch& batch, int64_t step, GradMode mode, size_t loss_normalizer,
      const GradReadyCallback& ready) override {
    ForwardBackwardOptions options;
    options.mode = mode;
    options.loss_normalizer = loss_normalizer;
    options.on_grad_ready = ready;
    ASSIGN_OR_RETURN(
        BatchMetrics m,
        mlp_.ForwardBackward(batch.features, batch.labels, options));
    return ToPass(m);
  }

  [[nodiscard]] absl::StatusOr<PassStats> Evaluate(const Dataset& data,
                                                   size_t begin,
                                                   size_t end) override {
    if (begin > end || end > data.num_examples) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluation range [", begin, ", ", end,
                       ") is outside the ", data.num_examples, " examples"));
    }
    if (begin == end) return PassStats{};
    const size_t fs = data.feature_size;
    ASSIGN_OR_RETURN(
        BatchMetrics m,
        mlp_.Evaluate(
            absl::MakeConstSpan(data.features)
                .subspan(begin * fs, (end - begin) * fs),
            absl::MakeConstSpan(data.labels).subspan(begin, end - begin),
            kEvalBatch));
    return ToPass(m);
  }

 private:
  static constexpr size_t kEvalBatch = 1000;

  static PassStats ToPass(const BatchMetrics& m) {
    PassStats s;
    s.loss_sum = m.loss * static_cast<double>(m.count);
    s.correct = m.correct;
    s.count = m.count;
    return s;
  }

  Mlp mlp_;
};

}  // namespace

absl::Status ConfigureMlp(const ModelSpec& model, TrainerConfig* config) {
  config->layer_sizes.clear();
  for (int64_t width : model.layer_sizes()) {
    config->layer_sizes.push_back(static_cast<size_t>(width));
  }
  return absl::OkStatus();
}

absl::Status ValidateMlpConfig(const TrainerConfig& config) {
  if (config.layer_sizes.size() < 2) {
    return InvalidTrainerConfigField(
        "model.layerSizes", absl::StrCat("has ", config.layer_sizes.size(),
                                         " entries; an mlp needs at least 2"));
  }
  for (size_t w : config.layer_sizes) {
    if (w == 0)
      return InvalidTrainerConfigField("model.layerSizes", "has a zero width");
  }
  return absl::OkStatus();
}

DataShape MlpDataShape(const TrainerConfig& config) {
  DataShape shape;
  if (!config.layer_sizes.empty()) {
    shape.features = config.layer_sizes.front();
    shape.classes = config.layer_sizes.back();
  }
  return shape;
}

absl::StatusOr<std::unique_ptr<TrainModel>> CreateMlpModel(
    const TrainerConfig& config, int rank) {
  if (config.cuda_device >= 0) {
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
    return CudaTrainModel::Create(config.layer_sizes, config.seed,
                                  config.cuda_device);
#else
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", rank, " is placed on cuda:", config.cuda_device,
        " but this worker was built without CUDA kernels; rebuild it with "
        "the CUDA toolkit or run the job on CPU devices"));
#endif
  }
  ASSIGN_OR_RETURN(Mlp mlp, Mlp::Create(config.layer_sizes, config.seed));
  return std::unique_ptr<TrainModel>(new MlpModel(std::move(mlp)));
}

}  // namespace gradsync
