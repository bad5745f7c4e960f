// TrainData: the training and test sets of a job, loaded once per worker
// process and shared read-only by all of its ranks (a Dataset is immutable
// after loading, dataset.h), so that four ranks on one host hold one copy
// of Fashion-MNIST, not four.
//
// Fashion-MNIST is standardised with its training-set mean and deviation
// (PixelScaling::kStandardize, torchvision's ToTensor + Normalize).
// The synthetic dataset is a deterministic, learnable classification task
// for models whose widths do not fit Fashion-MNIST: class k has a centre
// c_k drawn uniformly from [-1, 1]^d, and example i of class i % C is
// c_k + U(-1, 1)^d noise, all from SplitMix64 streams of the seed
// (portable_random.h), so every rank and host builds the same bytes.
//
//   ASSIGN_OR_RETURN(TrainData data, LoadTrainData(config));
//
// Errors: those of LoadFashionMnist (NOT_FOUND naming the missing file,
// INVALID_ARGUMENT, DATA_LOSS); INVALID_ARGUMENT when the model's input or
// class count does not match the dataset. Thread-safe (pure functions).
#ifndef GRADSYNC_WORKER_TRAIN_TRAIN_DATA_H_
#define GRADSYNC_WORKER_TRAIN_TRAIN_DATA_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/data/dataset.h"
#include "worker/train/train_config.h"

namespace gradsync {

// Sizes of the synthetic dataset's splits.
inline constexpr size_t kSyntheticTrainExamples = 8192;
inline constexpr size_t kSyntheticTestExamples = 2048;

struct TrainData {
  // Null for a synthetic model, which reads no data.
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;
};

// `examples` examples of `features` floats in `classes` classes, as
// described above; `split` selects an independent noise stream (0: train,
// 1: test) over the same class centres.
[[nodiscard]] absl::StatusOr<Dataset> MakeSyntheticDataset(size_t examples,
                                                           size_t features,
                                                           size_t classes,
                                                           uint64_t seed,
                                                           uint64_t split);

// The data `config` trains on: nothing for a synthetic model, otherwise
// both splits of the configured dataset, checked against the MLP's input
// width and class count.
[[nodiscard]] absl::StatusOr<TrainData> LoadTrainData(
    const TrainerConfig& config);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_TRAIN_DATA_H_
