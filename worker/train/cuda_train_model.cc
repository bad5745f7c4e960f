#include "worker/train/cuda_train_model.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#if GRADSYNC_HAVE_NCCL
#include "worker/train/cuda_device_ring.h"
#endif

namespace gradsync {
namespace {

// Examples per device pass of Evaluate, as the CPU model's.
constexpr size_t kEvalBatch = 1000;

PassStats ToPass(const BatchMetrics& m) {
  PassStats s;
  s.loss_sum = m.loss * static_cast<double>(m.count);
  s.correct = m.correct;
  s.count = m.count;
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainModel>> CudaTrainModel::Create(
    absl::Span<const size_t> layer_sizes, uint64_t seed, int device) {
  const std::string where = absl::StrCat("cuda:", device);
  CudaMlpOptions options;
  options.device = device;
  options.ready_ordering = ReadyOrdering::kHostSynchronized;
  absl::StatusOr<CudaMlp> mlp = CudaMlp::Create(layer_sizes, seed, options);
  if (!mlp.ok()) return Annotate(mlp.status(), where);
  const size_t n = mlp->num_parameters();
  absl::StatusOr<gpu::PinnedMemory> params =
      gpu::PinnedMemory::Allocate(n * sizeof(float));
  if (!params.ok()) {
    return Annotate(
        params.status(),
        absl::StrCat(where, ": pinned host mirror of ", n, " parameters"));
  }
  absl::StatusOr<gpu::PinnedMemory> grads =
      gpu::PinnedMemory::Allocate(n * sizeof(float));
  if (!grads.ok()) {
    return Annotate(
        grads.status(),
        absl::StrCat(where, ": pinned host mirror of ", n, " gradients"));
  }
  std::unique_ptr<CudaTrainModel> model(new CudaTrainModel(
      *std::move(mlp), *std::move(params), *std::move(grads)));
  if (n > 0) std::memset(model->host_grads_.data(), 0, n * sizeof(float));
  // The device holds the initial parameters; the mirror starts equal.
  RETURN_IF_ERROR(
      model->OnDevice(model->mlp_.CopyParamsToHost(0, model->params())));
  return std::unique_ptr<TrainModel>(std::move(model));
}

absl::Status CudaTrainModel::OnDevice(const absl::Status& status) const {
  return Annotate(status, absl::StrCat("cuda:", mlp_.device()));
}

absl::Status CudaTrainModel::UploadParams() {
  return OnDevice(mlp_.CopyParamsFromHost(0, params()));
}

absl::Status CudaTrainModel::DownloadParams() {
  return OnDevice(mlp_.CopyParamsToHost(0, params()));
}

void CudaTrainModel::set_device_resident(bool resident) {
  device_resident_ = resident;
  mlp_.set_ready_ordering(resident ? ReadyOrdering::kStreamOrdered
                                   : ReadyOrdering::kHostSynchronized);
}

#if GRADSYNC_HAVE_NCCL
absl::StatusOr<std::unique_ptr<DeviceRing>> CudaTrainModel::StartDeviceRing(
    DeviceRingOptions options) {
  return CreateCudaDeviceRing(this, std::move(options));
}
#else
absl::StatusOr<std::unique_ptr<DeviceRing>> CudaTrainModel::StartDeviceRing(
    DeviceRingOptions options) {
  return absl::FailedPreconditionError(absl::StrCat(
      "cuda:", mlp_.device(),
      ": this worker was built without NCCL, so it cannot run the NCCL "
      "ring; rebuild it where NCCL is installed, or submit the job with "
      "ringBackend \"tcp\""));
}
#endif

absl::StatusOr<PassStats> CudaTrainModel::ForwardBackward(
    const Batch& batch, int64_t step, GradMode mode, size_t loss_normalizer,
    const GradReadyCallback& ready) {
  ForwardBackwardOptions options;
  options.mode = mode;
  options.loss_normalizer = loss_normalizer;
  if (device_resident_) {
    // The device ring: the device parameters are the master copy, and the
    // ranges go to the NCCL buckets as device ranges, stream-ordered.
    options.on_grad_ready = ready;
    absl::StatusOr<BatchMetrics> m =
        mlp_.ForwardBackward(batch.features, batch.labels, options);
    if (!m.ok()) return OnDevice(m.status());
    return ToPass(*m);
  }
  // The optimizer (ring) or the pull from the shards (PS) wrote the host
  // mirror since the last pass: it is the master copy.
  RETURN_IF_ERROR(UploadParams());
  // The first failed copy; later ranges are neither copied nor forwarded
  // (the callback cannot stop the pass; the pass's error fails the step,
  // and the trainer aborts the sync that waits for them).
  absl::Status copy_status;
  if (ready) {
    options.on_grad_ready = [this, &ready, &copy_status](size_t begin,
                                                         size_t end) {
      if (!copy_status.ok()) return;
      // kHostSynchronized: the device range is final (every micro-batch
      // summed into it) when this runs.
      copy_status =
          mlp_.CopyGradsToHost(begin, grads().subspan(begin, end - begin));
      if (!copy_status.ok()) {
        copy_status =
            Annotate(copy_status, absl::StrCat("gradient range [", begin, ", ",
                                               end, ") to the host"));
        return;
      }
      ready(begin, end);
    };
  }
  absl::StatusOr<BatchMetrics> m =
      mlp_.ForwardBackward(batch.features, batch.labels, options);
  if (!m.ok()) return OnDevice(m.status());
  if (!copy_status.ok()) return OnDevice(copy_status);
  return ToPass(*m);
}

absl::StatusOr<PassStats> CudaTrainModel::Evaluate(const Dataset& data,
                                                   size_t begin, size_t end) {
  if (begin > end || end > data.num_examples) {
    return absl::InvalidArgumentError(
        absl::StrCat("evaluation range [", begin, ", ", end,
                     ") is outside the ", data.num_examples, " examples"));
  }
  if (begin == end) return PassStats{};
  if (!device_resident_) RETURN_IF_ERROR(UploadParams());
  const size_t fs = data.feature_size;
  absl::StatusOr<BatchMetrics> m = mlp_.Evaluate(
      absl::MakeConstSpan(data.features)
          .subspan(begin * fs, (end - begin) * fs),
      absl::MakeConstSpan(data.labels).subspan(begin, end - begin), kEvalBatch);
  if (!m.ok()) return OnDevice(m.status());
  return ToPass(*m);
}

}  // namespace gradsync
