#include "worker/train/train_data.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/model_init/portable_random.h"
#include "common/status_macros.h"
#include "models/model_builders.h"
#include "worker/data/fashion_mnist.h"

namespace gradsync {
namespace {

// Keeps a generated split below 1 GiB of floats.
constexpr size_t kMaxSyntheticFloats = size_t{1} << 28;

// Sub-streams of the job seed (distinct from the model's and the data
// order's, which use DeriveSeed(seed, epoch) and the raw seed).
constexpr uint64_t kCentreStream = 0x6c617373'63656e74ULL;
constexpr uint64_t kNoiseStream = 0x6e6f6973'65000000ULL;

// Uniform in [-1, 1).
float Symmetric(uint64_t bits) { return 2.0f * BitsToFloat01(bits) - 1.0f; }

[[nodiscard]] absl::Status CheckShape(const Dataset& data, DataShape shape,
                                      const TrainerConfig& config,
                                      absl::string_view what) {
  if (data.feature_size != shape.features ||
      data.num_classes != shape.classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has ", data.feature_size, " features and ", data.num_classes,
        " classes, but the ", config.model, " model takes ", shape.features,
        " features and ", shape.classes, " classes"));
  }
  if (data.num_examples == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Dataset> MakeSyntheticDataset(size_t examples, size_t features,
                                             size_t classes, uint64_t seed,
                                             uint64_t split) {
  if (features == 0 || classes == 0) {
    return absl::InvalidArgumentError(
        "a synthetic dataset needs at least one feature and one class");
  }
  if (examples > kMaxSyntheticFloats / features) {
    return absl::InvalidArgumentError(
        absl::StrCat("a synthetic dataset of ", examples, " examples of ",
                     features, " features exceeds ", kMaxSyntheticFloats,
                     " floats; use a narrower input layer"));
  }
  if (classes > kMaxSyntheticFloats / features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a synthetic dataset of ", classes, " classes of ", features,
        " features is too large; use fewer classes or inputs"));
  }
  Dataset data;
  data.num_examples = examples;
  data.feature_size = features;
  data.rows = 1;
  data.cols = features;
  data.num_classes = classes;
  const uint64_t centre_seed = DeriveSeed(seed, kCentreStream);
  std::vector<float> centres(classes * features);
  for (size_t i = 0; i < centres.size(); ++i) {
    centres[i] = Symmetric(SplitMix64At(centre_seed, i));
  }
  data.features.resize(examples * features);
  data.labels.resize(examples);
  SplitMix64 noise(DeriveSeed(seed, kNoiseStream + split));
  for (size_t e = 0; e < examples; ++e) {
    const size_t label = e % classes;
    data.labels[e] = static_cast<int32_t>(label);
    const float* centre = &centres[label * features];
    float* out = &data.features[e * features];
    for (size_t j = 0; j < features; ++j) {
      out[j] = centre[j] + Symmetric(noise.Next());
    }
  }
  return data;
}

absl::StatusOr<TrainData> LoadTrainData(const TrainerConfig& config) {
  TrainData data;
  ASSIGN_OR_RETURN(const ModelBuilder* builder, FindModelBuilder(config.model));
  if (builder->data_shape == nullptr) return data;  // it reads no data
  if (builder->validate != nullptr) RETURN_IF_ERROR(builder->validate(config));
  const DataShape shape = builder->data_shape(config);
  Dataset train, test;
  if (config.dataset == DatasetKind::kFashionMnist) {
    const std::string dir = config.dataset_path.empty()
                                ? std::string(kFashionMnistDir)
                                : config.dataset_path;
    ASSIGN_OR_RETURN(train, LoadFashionMnist(dir, DataSplit::kTrain,
                                             PixelScaling::kStandardize));
    ASSIGN_OR_RETURN(test, LoadFashionMnist(dir, DataSplit::kTest,
                                            PixelScaling::kStandardize));
  } else {
    ASSIGN_OR_RETURN(
        train, MakeSyntheticDataset(kSyntheticTrainExamples, shape.features,
                                    shape.classes, config.seed, 0));
    ASSIGN_OR_RETURN(
        test, MakeSyntheticDataset(kSyntheticTestExamples, shape.features,
                                   shape.classes, config.seed, 1));
  }
  RETURN_IF_ERROR(CheckShape(train, shape, config, "the training set"));
  RETURN_IF_ERROR(CheckShape(test, shape, config, "the test set"));
  data.train = std::make_shared<const Dataset>(std::move(train));
  data.test = std::make_shared<const Dataset>(std::move(test));
  return data;
}

}  // namespace gradsync
