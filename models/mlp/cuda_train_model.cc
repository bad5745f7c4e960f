#include "models/mlp/cuda_train_model.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
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
  // Both residencies order their consumers (the copy stream, the NCCL
  // stream) after the ready event themselves.
  options.ready_ordering = ReadyOrdering::kStreamOrdered;
  absl::StatusOr<CudaMlp> mlp = CudaMlp::Create(layer_sizes, seed, options);
  if (!mlp.ok()) return Annotate(mlp.status(), where);
  const size_t n = mlp->num_parameters();
  absl::StatusOr<gpu::PinnedMemory> params =
      gpu::PinnedMemory::Allocate(device, n * sizeof(float));
  if (!params.ok()) {
    return Annotate(
        params.status(),
        absl::StrCat(where, ": pinned host mirror of ", n, " parameters"));
  }
  absl::StatusOr<gpu::PinnedMemory> grads =
      gpu::PinnedMemory::Allocate(device, n * sizeof(float));
  if (!grads.ok()) {
    return Annotate(
        grads.status(),
        absl::StrCat(where, ": pinned host mirror of ", n, " gradients"));
  }
  absl::StatusOr<gpu::CudaStream> copy_stream = gpu::CudaStream::Create(device);
  if (!copy_stream.ok()) {
    return Annotate(copy_stream.status(),
                    absl::StrCat(where, ": gradient copy stream"));
  }
  std::vector<gpu::CudaEvent> copy_events;
  for (size_t l = 0; l < mlp->layout().num_layers(); ++l) {
    absl::StatusOr<gpu::CudaEvent> event = gpu::CudaEvent::Create(device);
    if (!event.ok()) {
      return Annotate(event.status(),
                      absl::StrCat(where, ": gradient copy event"));
    }
    copy_events.push_back(*std::move(event));
  }
  std::unique_ptr<CudaTrainModel> model(
      new CudaTrainModel(*std::move(mlp), *std::move(params), *std::move(grads),
                         *std::move(copy_stream), std::move(copy_events)));
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
  absl::StatusOr<BatchMetrics> m =
      ready ? PassWithStagedRanges(batch, options, ready)
            : mlp_.ForwardBackward(batch.features, batch.labels, options);
  if (!m.ok()) return OnDevice(m.status());
  return ToPass(*m);
}

absl::StatusOr<BatchMetrics> CudaTrainModel::PassWithStagedRanges(
    const Batch& batch, ForwardBackwardOptions options,
    const GradReadyCallback& ready) {
  struct Staged {
    size_t begin;
    size_t end;
    cudaEvent_t copied;
  };
  std::vector<Staged> staged;  // copies enqueued, not yet handed to `ready`
  size_t forwarded = 0;
  absl::Status status;  // the first failed copy; later ranges are dropped
  // Hands over, in report order, the ranges whose copy has finished; all
  // of them (waiting) when `wait`.
  auto forward = [&](bool wait) {
    while (status.ok() && forwarded < staged.size()) {
      const Staged& s = staged[forwarded];
      const cudaError_t done =
          wait ? cudaEventSynchronize(s.copied) : gpu::QueryEvent(s.copied);
      if (done == cudaErrorNotReady) return;
      status =
          gpu::CudaStatus(done, absl::StrCat("gradient range [", s.begin, ", ",
                                             s.end, ") to the host"));
      if (!status.ok()) return;
      ready(s.begin, s.end);
      ++forwarded;
    }
  };
  const cudaStream_t copy = copy_stream_.get();
  options.on_grad_ready = [&](size_t begin, size_t end) {
    if (!status.ok()) return;
    if (staged.size() == copy_events_.size()) {
      status = absl::InternalError("more gradient ranges than layers");
      return;
    }
    const cudaEvent_t copied = copy_events_[staged.size()].get();
    const size_t bytes = (end - begin) * sizeof(float);
    // Stream-ordered: the copy waits on the device for the layer's
    // backward, recorded in ready_event() just before this call.
    status = gpu::CudaStatus(cudaStreamWaitEvent(copy, mlp_.ready_event(), 0),
                             "cudaStreamWaitEvent (gradient copy)");
    if (status.ok()) {
      status =
          gpu::CudaStatus(cudaMemcpyAsync(grads().data() + begin,
                                          mlp_.grads_device().data() + begin,
                                          bytes, cudaMemcpyDeviceToHost, copy),
                          "cudaMemcpyAsync (gradient range to the host)");
    }
    if (status.ok()) {
      status =
          gpu::CudaStatus(cudaEventRecord(copied, copy), "cudaEventRecord");
    }
    if (!status.ok()) return;
    staged.push_back({begin, end, copied});
    // Ranges are reported as their backward is enqueued, well before the
    // device runs it. After the last one (every layer's), wait here for
    // each copy in turn, handing each range over as soon as it is on the
    // host: so the ring or the PS starts on the last layers' gradients
    // while the device still computes the first layers', rather than after
    // the pass's own end-of-backward synchronisation.
    forward(/*wait=*/staged.size() == copy_events_.size());
  };
  absl::StatusOr<BatchMetrics> m =
      mlp_.ForwardBackward(batch.features, batch.labels, options);
  // Every copy ends before the next pass may overwrite the gradients,
  // even after a failure.
  const absl::Status drained = gpu::CudaStatus(
      cudaStreamSynchronize(copy), "cudaStreamSynchronize (copies)");
  if (!m.ok()) return m.status();
  forward(/*wait=*/true);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(drained);
  return m;
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
