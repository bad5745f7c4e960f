// Mlp: a multi-layer perceptron classifier (Linear -> ReLU -> ... -> Linear)
// trained with softmax cross-entropy, the model of gradsync's worker ranks.
//
// Parameters live in ONE contiguous fp32 buffer and gradients in a second
// buffer with the same layout (MlpLayout: layers in forward order, each W
// row-major [out][in] followed by b). Optimizers, all-reduce buckets and PS
// shards work directly on these buffers.
//
// ForwardBackward computes the loss, the accuracy and the gradient of one
// batch with OpenBLAS SGEMM. Backward visits layers from last to first and,
// as soon as layer l's gradient is final, calls the GradReadyCallback with
// [layer(l).begin(), layer(l).end()): ranges grow from the end of the buffer
// toward its beginning and tile it exactly once (gradient_ready.h), so a
// sync strategy can start bucket all-reduces while backward continues.
//
// Loss: mean over the batch of -log softmax(logits)[label], or, with
// ForwardBackwardOptions::loss_normalizer = B, the batch's summed loss
// divided by B. A rank holding a share of a global batch of size B passes B,
// so that the SUM over ranks of the gradients is the gradient of the global
// mean loss, whatever the (possibly unequal) share sizes.
//
// Results are deterministic for a fixed BLAS thread count (blas.h).
//
// Errors: INVALID_ARGUMENT for a bad layout, inputs whose length is not
// batch * input_size(), a label outside [0, num_classes()), a batch larger
// than INT_MAX; RESOURCE_EXHAUSTED when the buffers cannot be allocated.
// On an error the gradients are unchanged.
// Threading: not thread-safe (one Mlp per rank; the activations are reused
// workspace); distinct Mlp objects are independent.
//
// Example:
//   ASSIGN_OR_RETURN(Mlp mlp, Mlp::Create({784, 256, 256, 10}, /*seed=*/1));
//   ForwardBackwardOptions opts;
//   opts.on_grad_ready = [&](size_t b, size_t e) { sync.Launch(b, e); };
//   ASSIGN_OR_RETURN(BatchMetrics m, mlp.ForwardBackward(x, y, opts));
//   RETURN_IF_ERROR(sgd.Step(mlp.params(), mlp.grads()));
#ifndef GRADSYNC_WORKER_MODEL_MLP_H_
#define GRADSYNC_WORKER_MODEL_MLP_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/model_init/mlp_layout.h"
#include "worker/model/gradient_ready.h"

namespace gradsync {

// Gradient accumulation over M micro-batches of one global batch of B
// examples: the first pass kOverwrite, the others kAccumulate, all with
// loss_normalizer = B; the callback fires in every pass, and a strategy
// that syncs only after the last micro-batch (DDP's no_sync) ignores it in
// the others.
struct ForwardBackwardOptions {
  GradMode mode = GradMode::kOverwrite;
  // Divide the batch's summed loss gradient by this; 0 means the batch size
  // (the mean loss).
  size_t loss_normalizer = 0;
  // Called once per layer, last layer first; may be empty.
  GradReadyCallback on_grad_ready;
};

// Loss and accuracy over `count` examples.
struct BatchMetrics {
  double loss = 0.0;   // mean cross-entropy over the examples
  size_t correct = 0;  // examples whose arg-max logit is the label
  size_t count = 0;
  double accuracy() const {
    return count == 0 ? 0.0 : static_cast<double>(correct) / count;
  }
};

class Mlp {
 public:
  // Allocates the buffers, initialises the parameters from `seed`
  // (mlp_layout.h) and zeroes the gradients.
  [[nodiscard]] static absl::StatusOr<Mlp> Create(
      absl::Span<const size_t> layer_sizes, uint64_t seed);

  Mlp(Mlp&&) = default;
  Mlp& operator=(Mlp&&) = default;
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  const MlpLayout& layout() const { return layout_; }
  size_t num_parameters() const { return layout_.num_parameters(); }
  size_t input_size() const { return layout_.input_size(); }
  size_t num_classes() const { return layout_.num_classes(); }

  absl::Span<float> params() { return absl::MakeSpan(params_); }
  absl::Span<const float> params() const { return params_; }
  absl::Span<float> grads() { return absl::MakeSpan(grads_); }
  absl::Span<const float> grads() const { return grads_; }

  // Sets every gradient to 0.
  void ZeroGrads();

  // Forward and backward over the batch of labels.size() examples stored
  // row-major in `inputs`. Writes (or adds, in kAccumulate mode) the
  // gradient of the loss to grads(). An empty batch reports zero gradients
  // (kOverwrite) or leaves them (kAccumulate), still calling the callback
  // for every layer so that collectives stay matched across ranks.
  [[nodiscard]] absl::StatusOr<BatchMetrics> ForwardBackward(
      absl::Span<const float> inputs, absl::Span<const int32_t> labels,
      const ForwardBackwardOptions& options = {});

  // Loss and accuracy over a whole dataset, forward only, `batch_size`
  // examples at a time. Gradients are untouched.
  [[nodiscard]] absl::StatusOr<BatchMetrics> Evaluate(
      absl::Span<const float> inputs, absl::Span<const int32_t> labels,
      size_t batch_size);

  // The predicted class (arg-max logit, lowest index on ties) of each of
  // the classes.size() examples in `inputs`.
  [[nodiscard]] absl::Status Predict(absl::Span<const float> inputs,
                                     absl::Span<int32_t> classes);

 private:
  explicit Mlp(MlpLayout layout) : layout_(std::move(layout)) {}

  // Sizes the activation workspace for `batch` examples.
  [[nodiscard]] absl::Status Reserve(size_t batch);
  // Runs the layers on `batch` examples; returns the logits [batch][classes].
  const float* Forward(const float* inputs, size_t batch);
  // Backward from the logits' gradient in delta_[0] (see .cc).
  void Backward(const float* inputs, size_t batch, float beta,
                const GradReadyCallback& ready);

  MlpLayout layout_;
  std::vector<float> params_;
  std::vector<float> grads_;
  // Workspace: activations_[l] = output of layer l (post-ReLU except for
  // the last layer's logits), [batch][out_l]; two delta buffers of
  // [batch][max_width]; one bias-gradient row.
  size_t reserved_batch_ = 0;
  std::vector<std::vector<float>> activations_;
  std::vector<float> delta_[2];
  std::vector<float> bias_row_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_MLP_H_
