#include "worker/train/train_model.h"

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/mlp.h"
#include "worker/model/synthetic.h"
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
#include "worker/train/cuda_train_model.h"
#endif

namespace gradsync {
namespace {

// Granularity at which the synthetic backward reports ready ranges, like
// layers of 1 MiB.
constexpr size_t kSyntheticChunkFloats = size_t{1} << 18;

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

[[nodiscard]] absl::StatusOr<std::unique_ptr<TrainModel>> CreateSynthetic(
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

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceRing>> TrainModel::StartDeviceRing(
    DeviceRingOptions options) {
  return absl::FailedPreconditionError(
      "the NCCL ring needs an mlp on a CUDA device; this rank's model keeps "
      "its parameters in host memory (use ringBackend \"tcp\")");
}

absl::StatusOr<std::unique_ptr<TrainModel>> CreateTrainModel(
    const TrainerConfig& config, int rank) {
  if (config.model == ModelKind::kSynthetic) {
    return CreateSynthetic(config, rank);
  }
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
