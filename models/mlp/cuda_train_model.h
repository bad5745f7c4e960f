// CudaTrainModel: the TrainModel (train_model.h) of an MLP rank on one CUDA
// device, for the host-memory gradient syncs (the TCP ring of
// ring_sync.h and the parameter server of ps_sync.h), which read and write
// params() and grads() as host memory. Built only with the CUDA kernels
// (GRADSYNC_HAVE_CUDA_KERNELS); the mlp builder (mlp_builder.h) picks it when
// TrainerConfig.cuda_device >= 0.
//
// The forward and backward passes run on the device (CudaMlp, with
// ReadyOrdering::kStreamOrdered); the model keeps HOST mirrors of the
// flat parameter and gradient buffers, in pinned memory, and params() and
// grads() return those mirrors. The host mirror of the parameters is the
// master copy: the trainer's optimizer (ring) or the PS pull writes it.
//
// What crosses PCIe, per step:
//   - host -> device, at the start of EVERY ForwardBackward and Evaluate:
//     all parameters (4 bytes each; the optimizer or a PS pull may have
//     changed them), then the pass's inputs and labels;
//   - device -> host, during the backward of the pass that reports ready
//     ranges (the synchronising micro-batch): each reported gradient range
//     (one per layer) is copied into the host mirror on a copy stream of
//     its own, ordered after the layer's backward by the model's ready
//     event (ReadyOrdering::kStreamOrdered), so the copy of layer l
//     overlaps the backward of layer l-1 and the sync of earlier ranges.
//     Ranges are reported as their backward is enqueued, ahead of the
//     device; once all are, the pass waits for each copy in report order
//     and hands its range to `ready` as soon as it is on the host, before
//     the pass's end-of-backward synchronisation. So the sync of the last
//     layers overlaps the backward of the first, as on the CPU.
// So a step moves 2 x 4 x num_parameters bytes over PCIe at least (more
// with gradient accumulation, whose every micro-batch uploads the
// parameters again). The NCCL ring path avoids all of it: while a
// DeviceRing (device_ring.h) is started, the model is device-resident
// (see set_device_resident) and nothing crosses PCIe but the batches, the
// loss and the parameter hash.
//
// Gradient accumulation: the DEVICE accumulates (GradMode::kAccumulate);
// a pass called with an empty `ready` (DDP's no_sync micro-batches) copies
// no gradient back, so grads() is stale after it. The pass with a
// callback copies each range after the device has summed every
// micro-batch into it: when a range is reported, the host mirror holds the
// full accumulated gradient of that range, and after the pass all of it.
// Whatever the sync writes into grads() (the ring's in-place reduction) is
// never read back by the device: the next pass overwrites or adds on the
// device buffer.
//
// Errors: those of CudaMlp (cuda_mlp.h), prefixed with "cuda:<device>":
// FAILED_PRECONDITION "no CUDA device visible" on a host without a GPU (or
// when <device> is not visible), RESOURCE_EXHAUSTED when device or pinned
// memory runs out, INVALID_ARGUMENT for a batch of the wrong width, the
// CUDA call's code otherwise. A failed gradient copy during backward stops
// the forwarding of later ranges to `ready` and fails the pass.
// Threading: not thread-safe; one model per rank thread (CudaMlp makes the
// device current for each call only, so ranks on several devices can share
// a process).
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<TrainModel> model,
//                    CudaTrainModel::Create(config.layer_sizes, config.seed,
//                                           /*device=*/0));
#ifndef GRADSYNC_MODELS_MLP_CUDA_TRAIN_MODEL_H_
#define GRADSYNC_MODELS_MLP_CUDA_TRAIN_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/data/dataset.h"
#include "worker/model/cuda/cuda_mlp.h"
#include "worker/model/cuda/cuda_resources.h"
#include "worker/model/gradient_ready.h"
#include "worker/train/train_model.h"

namespace gradsync {

class CudaTrainModel final : public TrainModel {
 public:
  // An MLP of `layer_sizes` on CUDA device `device`, with the initial
  // parameters of `seed` (bitwise those of the CPU model) in both the
  // device buffer and the host mirror, and zero gradients.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TrainModel>> Create(
      absl::Span<const size_t> layer_sizes, uint64_t seed, int device);

  absl::Span<float> params() override {
    return absl::Span<float>(host_params_.as<float>(), size_);
  }
  absl::Span<float> grads() override {
    return absl::Span<float>(host_grads_.as<float>(), size_);
  }
  bool uses_data() const override { return true; }

  [[nodiscard]] absl::StatusOr<PassStats> ForwardBackward(
      const Batch& batch, int64_t step, GradMode mode, size_t loss_normalizer,
      const GradReadyCallback& ready) override;

  [[nodiscard]] absl::StatusOr<PassStats> Evaluate(const Dataset& data,
                                                   size_t begin,
                                                   size_t end) override;

  // The NCCL ring path (cuda_device_ring.h); FAILED_PRECONDITION when this
  // worker was built without NCCL.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<DeviceRing>> StartDeviceRing(
      DeviceRingOptions options) override;

  // For the device ring (cuda_device_ring.h). Device-resident: passes
  // read the device parameters as they are (no upload from the host
  // mirror) and report DEVICE gradient ranges as soon as their backward is
  // enqueued (the consumer orders itself after mlp().ready_event()),
  // instead of copying them to grads().
  // Host-resident (the default): as the file comment says.
  CudaMlp& mlp() { return mlp_; }
  void set_device_resident(bool resident);
  // Copies the host mirror of the parameters to the device, and back.
  [[nodiscard]] absl::Status UploadParams();
  [[nodiscard]] absl::Status DownloadParams();

 private:
  CudaTrainModel(CudaMlp mlp, gpu::PinnedMemory params, gpu::PinnedMemory grads,
                 gpu::CudaStream copy_stream,
                 std::vector<gpu::CudaEvent> copy_events)
      : mlp_(std::move(mlp)),
        size_(mlp_.num_parameters()),
        host_params_(std::move(params)),
        host_grads_(std::move(grads)),
        copy_stream_(std::move(copy_stream)),
        copy_events_(std::move(copy_events)) {}

  // The host-resident pass with ranges reported: see the file comment.
  [[nodiscard]] absl::StatusOr<BatchMetrics> PassWithStagedRanges(
      const Batch& batch, ForwardBackwardOptions options,
      const GradReadyCallback& ready);

  // "cuda:<device>: <message>", same code.
  [[nodiscard]] absl::Status OnDevice(const absl::Status& status) const;

  CudaMlp mlp_;
  const size_t size_;
  gpu::PinnedMemory host_params_;
  gpu::PinnedMemory host_grads_;
  // The device -> host gradient copies, and one event per layer's copy.
  gpu::CudaStream copy_stream_;
  std::vector<gpu::CudaEvent> copy_events_;
  bool device_resident_ = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MLP_CUDA_TRAIN_MODEL_H_
