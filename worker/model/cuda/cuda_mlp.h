// CudaMlp: the multi-layer perceptron of worker/model/mlp.h on one CUDA
// device. Same layout (MlpLayout: ONE flat fp32 parameter buffer and ONE
// flat gradient buffer, layers as views), same initial parameters (made on
// the host by InitializeParameters, exactly as Mlp::Create, then copied:
// bitwise identical to the CPU model for the same sizes and seed), same
// loss (softmax cross-entropy with loss_normalizer), same gradient
// accumulation modes and the same ready-range reports (gradient_ready.h):
// one range per layer, last layer first, tiling [0, num_parameters()) from
// the end.
//
// The buffers live in device memory (cudaMalloc, no managed memory). The
// model owns one non-blocking compute stream (stream()) and a cuBLAS handle
// bound to it: the GEMMs are cublasSgemm in full FP32 (no TF32), bias,
// ReLU, its mask, softmax cross-entropy and the bias-gradient column sums
// are small deterministic kernels (mlp_kernels.h). Inputs and labels come
// from host memory through pinned staging buffers, copied asynchronously
// on the compute stream. Gradients agree with the CPU model within float
// summation-order differences (the GEMMs add in another order); a given
// GPU, cuBLAS version and shape give bitwise the same results run to run.
//
// Ready ranges and CUDA ordering. Before reporting layer l's range, the
// backward pass has enqueued every kernel that writes that layer's
// gradients or reads its parameters, and records ready_event() on the
// compute stream. Then, by ReadyOrdering:
//   kHostSynchronized (default): the host waits for ready_event() before
//     calling the callback, so the range is final in device memory when
//     the callback runs: the consumer may use it from any stream, thread
//     or host copy with no further ordering. Costs one host round trip per
//     layer.
//   kStreamOrdered: the callback runs as soon as the work is enqueued; the
//     consumer must order its use of the range after ready_event(), INSIDE
//     the callback (the event is re-recorded for the next layer after the
//     callback returns), e.g. cudaStreamWaitEvent(comm_stream,
//     mlp.ready_event(), 0) before an ncclAllReduce on comm_stream.
// Either way, whoever writes into a reported range (a PS pull of the next
// parameters) or keeps reducing it must be done before the next pass on
// stream() starts (gradient_ready.h): wait for it on the host, or make
// stream() wait for an event of that work.
//
// When ForwardBackward or Evaluate returns OK, all of its device work has
// completed (the metrics are read back). ZeroGrads, the Copy* calls and
// CudaOptimizer::Step on stream() are stream-ordered with the passes.
//
// Errors: as Mlp (INVALID_ARGUMENT for inputs whose length is not batch *
// input_size(), a label outside [0, num_classes()), a batch over INT_MAX,
// ranges outside the buffers; nothing is enqueued then, the gradients are
// unchanged); FAILED_PRECONDITION when no CUDA device is visible or
// `device` is not; RESOURCE_EXHAUSTED when device or pinned memory runs
// out; otherwise the code of the failed CUDA/cuBLAS call (cuda_status.h;
// mostly INTERNAL), its message naming the call and the layer. After a
// CUDA failure during a pass some ranges may have been reported and the
// gradients are unspecified.
// Threading: not thread-safe (one CudaMlp per rank thread); each call
// makes device() current on the calling thread for its duration only.
//
// Example:
//   ASSIGN_OR_RETURN(CudaMlp mlp, CudaMlp::Create({784, 256, 10}, seed));
//   ForwardBackwardOptions opts;
//   opts.on_grad_ready = [&](size_t b, size_t e) { sync.Launch(b, e); };
//   ASSIGN_OR_RETURN(BatchMetrics m, mlp.ForwardBackward(x, y, opts));
//   RETURN_IF_ERROR(adam.Step(mlp.params_device(), mlp.grads_device(),
//                             mlp.stream()));
#ifndef GRADSYNC_WORKER_MODEL_CUDA_CUDA_MLP_H_
#define GRADSYNC_WORKER_MODEL_CUDA_CUDA_MLP_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/model_init/mlp_layout.h"
#include "worker/model/cuda/cuda_resources.h"
#include "worker/model/gradient_ready.h"
#include "worker/model/mlp.h"

namespace gradsync {

// How a ready range is ordered with the device work that produced it (see
// the file comment).
enum class ReadyOrdering {
  kHostSynchronized,
  kStreamOrdered,
};

struct CudaMlpOptions {
  int device = 0;  // CUDA device index
  ReadyOrdering ready_ordering = ReadyOrdering::kHostSynchronized;
};

class CudaMlp {
 public:
  // Allocates the device buffers on options.device, copies the initial
  // parameters for `seed` and zeroes the gradients.
  [[nodiscard]] static absl::StatusOr<CudaMlp> Create(
      absl::Span<const size_t> layer_sizes, uint64_t seed,
      const CudaMlpOptions& options = {});

  CudaMlp(CudaMlp&&) = default;
  // Not move-assignable: the members' assignment would free the old stream
  // before the old buffers its queued work still uses.
  CudaMlp& operator=(CudaMlp&&) = delete;
  CudaMlp(const CudaMlp&) = delete;
  CudaMlp& operator=(const CudaMlp&) = delete;
  // Waits for work still queued on the stream (an optimizer step, a pass
  // that failed half-way) before its memory is freed.
  ~CudaMlp();

  const MlpLayout& layout() const { return layout_; }
  size_t num_parameters() const { return layout_.num_parameters(); }
  size_t input_size() const { return layout_.input_size(); }
  size_t num_classes() const { return layout_.num_classes(); }
  int device() const { return options_.device; }
  ReadyOrdering ready_ordering() const { return options_.ready_ordering; }
  void set_ready_ordering(ReadyOrdering ordering) {
    options_.ready_ordering = ordering;
  }

  // The compute stream: every pass, copy and ZeroGrads runs on it.
  cudaStream_t stream() const { return stream_.get(); }
  // Recorded on stream() after each layer's backward, just before its
  // range is reported.
  cudaEvent_t ready_event() const { return ready_event_.get(); }

  // The flat buffers in DEVICE memory (never dereference on the host).
  absl::Span<float> params_device() {
    return absl::Span<float>(params_.as<float>(), num_parameters());
  }
  absl::Span<const float> params_device() const {
    return absl::Span<const float>(params_.as<float>(), num_parameters());
  }
  absl::Span<float> grads_device() {
    return absl::Span<float>(grads_.as<float>(), num_parameters());
  }
  absl::Span<const float> grads_device() const {
    return absl::Span<const float>(grads_.as<float>(), num_parameters());
  }

  // Host copies of flat elements [begin, begin + size) after the work
  // already on stream(); they return when the copy is complete.
  [[nodiscard]] absl::Status CopyParamsToHost(size_t begin,
                                              absl::Span<float> out) const;
  [[nodiscard]] absl::Status CopyGradsToHost(size_t begin,
                                             absl::Span<float> out) const;
  [[nodiscard]] absl::Status CopyParamsFromHost(size_t begin,
                                                absl::Span<const float> in);

  // Enqueues zeroing every gradient on stream().
  [[nodiscard]] absl::Status ZeroGrads();

  // HashParameters (worker/train/param_hash.h) of the device parameters
  // after the work already on stream(), computed on the device: 8 bytes
  // cross to the host. Returns when it is known.
  [[nodiscard]] absl::StatusOr<uint64_t> HashParams();

  // Forward and backward over the batch of labels.size() examples stored
  // row-major in host memory `inputs`, as Mlp::ForwardBackward (an empty
  // batch reports zero gradients or leaves them, still reporting every
  // range).
  [[nodiscard]] absl::StatusOr<BatchMetrics> ForwardBackward(
      absl::Span<const float> inputs, absl::Span<const int32_t> labels,
      const ForwardBackwardOptions& options = {});

  // Loss and accuracy over the examples in host memory (a dataset or a
  // range of one), forward only, `batch_size` examples at a time, as
  // Mlp::Evaluate. Gradients are untouched.
  [[nodiscard]] absl::StatusOr<BatchMetrics> Evaluate(
      absl::Span<const float> inputs, absl::Span<const int32_t> labels,
      size_t batch_size);

 private:
  CudaMlp(MlpLayout layout, const CudaMlpOptions& options)
      : layout_(std::move(layout)), options_(options) {}

  [[nodiscard]] absl::Status CheckRange(size_t begin, size_t size) const;
  [[nodiscard]] absl::Status Reserve(size_t batch);
  // Stages `batch` examples (and labels) into device memory.
  [[nodiscard]] absl::Status Upload(const float* inputs, const int32_t* labels,
                                    size_t batch);
  // Runs the layers on inputs_ for `batch` examples; the logits end in
  // activations_.back().
  [[nodiscard]] absl::Status Forward(size_t batch);
  // Softmax cross-entropy of the logits; dlogits into delta_[0] when
  // `normalizer` > 0; the per-example loss and hits go to the pinned
  // host buffers (read them after synchronising).
  [[nodiscard]] absl::Status Score(size_t batch, float normalizer,
                                   bool with_gradient);
  // Backward from delta_[0]; reports each layer's range.
  [[nodiscard]] absl::Status Backward(size_t batch, bool accumulate,
                                      const GradReadyCallback& ready);
  // Records ready_event(), orders it per ReadyOrdering and reports l.
  [[nodiscard]] absl::Status ReportReady(size_t l,
                                         const GradReadyCallback& ready);
  // Adds the pinned per-example results to `metrics` and `sum_loss`.
  void Tally(size_t batch, double* sum_loss, BatchMetrics* metrics) const;

  MlpLayout layout_;
  CudaMlpOptions options_;
  // Declared first: destroyed last, after the memory that work on it uses.
  gpu::CudaStream stream_;
  gpu::CudaEvent ready_event_;
  // Recorded after each upload from the pinned staging buffers: the host
  // waits for it before refilling them.
  gpu::CudaEvent staged_event_;
  gpu::CublasHandle blas_;
  gpu::DeviceMemory params_;
  gpu::DeviceMemory grads_;
  gpu::DeviceMemory hash_sum_;  // one unsigned long long, for HashParams
  // Workspace for up to reserved_batch_ examples: the inputs and labels,
  // activations_[l] = output of layer l ([batch][out_l], post-ReLU except
  // the logits), two delta buffers [batch][max_width], per-example loss
  // and hits; pinned staging for the uploads and the read-back.
  size_t reserved_batch_ = 0;
  gpu::DeviceMemory inputs_;
  gpu::DeviceMemory labels_;
  std::vector<gpu::DeviceMemory> activations_;
  gpu::DeviceMemory delta_[2];
  gpu::DeviceMemory loss_;
  gpu::DeviceMemory correct_;
  gpu::PinnedMemory staged_inputs_;
  gpu::PinnedMemory staged_labels_;
  gpu::PinnedMemory host_loss_;
  gpu::PinnedMemory host_correct_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_CUDA_MLP_H_
