// TrainModel: what the step loop needs from a model, so that one loop
// drives the MLP and the synthetic workload alike: the flat parameter and
// gradient buffers, a forward/backward pass that reports ready gradient
// ranges (gradient_ready.h), and evaluation.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<TrainModel> model,
//                    CreateTrainModel(config, rank));
//   ASSIGN_OR_RETURN(PassStats s, model->ForwardBackward(
//       batch, step, GradMode::kOverwrite, global_batch, on_ready));
//
// The synthetic model's parameters start at zero; its "gradient" is
// SyntheticWorkload::Value(rank, step, i) (small integers, so that sums
// over ranks are exact), produced in config.synthetic_compute per step
// (spread over the micro-batches) with the rank's thread asleep, as an
// accelerator rank would leave its host core free. It has no loss and no
// evaluation.
//
// Devices: an mlp with config.cuda_device >= 0 runs on that CUDA device
// (cuda_train_model.h: params() and grads() are host mirrors, copied over
// PCIe every step); the synthetic model has no compute kernels and always
// stays on the host (its emulated compute already leaves the core free).
//
// Errors: those of Mlp / SyntheticWorkload / CudaTrainModel
// (INVALID_ARGUMENT for a batch of the wrong width, RESOURCE_EXHAUSTED when
// buffers cannot be allocated, FAILED_PRECONDITION "cuda:<d>: ... no CUDA
// device visible" on a host without that GPU); FAILED_PRECONDITION from
// CreateTrainModel for a CUDA mlp when this worker was built without CUDA
// kernels, and from Evaluate on a model without evaluation.
// Threading: not thread-safe; one model per rank.
#ifndef GRADSYNC_WORKER_TRAIN_TRAIN_MODEL_H_
#define GRADSYNC_WORKER_TRAIN_TRAIN_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/data/dataset.h"
#include "worker/model/gradient_ready.h"
#include "worker/train/device_ring.h"
#include "worker/train/train_config.h"

namespace gradsync {

// Summed (not averaged) statistics of one pass, so that passes and ranks
// add up.
struct PassStats {
  double loss_sum = 0.0;  // sum of the examples' cross-entropy
  size_t correct = 0;     // examples classified right
  size_t count = 0;       // examples seen
};

class TrainModel {
 public:
  virtual ~TrainModel() = default;

  virtual absl::Span<float> params() = 0;
  virtual absl::Span<float> grads() = 0;
  // False for the synthetic model (no dataset, no loss).
  virtual bool uses_data() const = 0;

  // One forward/backward pass over `batch` (ignored without data) for
  // `step`, writing or adding (mode) the gradient of the summed loss
  // divided by `loss_normalizer`, and calling `ready` (may be empty) for
  // each final gradient range, last first. grads() holds the (accumulated)
  // gradient of a range when it is reported; after a pass with an empty
  // `ready` a device model's grads() may be stale (the device accumulates
  // until a pass reports).
  [[nodiscard]] virtual absl::StatusOr<PassStats> ForwardBackward(
      const Batch& batch, int64_t step, GradMode mode, size_t loss_normalizer,
      const GradReadyCallback& ready) = 0;

  // Loss and accuracy over examples [begin, end) of `data`, forward only.
  [[nodiscard]] virtual absl::StatusOr<PassStats> Evaluate(const Dataset& data,
                                                           size_t begin,
                                                           size_t end) = 0;

  // Starts the device-resident ring path (device_ring.h) from the current
  // params() (and options.state); the model must outlive the result.
  // FAILED_PRECONDITION for models without device buffers (the CPU mlp,
  // the synthetic model) and for workers built without NCCL.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<DeviceRing>>
  StartDeviceRing(DeviceRingOptions options);
};

// The model of `config` for global rank `rank`, with its initial
// parameters (a pure function of config.seed: identical on every rank):
// its kind's builder (models/model_builders.h) builds it.
[[nodiscard]] absl::StatusOr<std::unique_ptr<TrainModel>> CreateTrainModel(
    const TrainerConfig& config, int rank);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_TRAIN_MODEL_H_
