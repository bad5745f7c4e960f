#include "worker/model/mlp.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/batch_checks.h"

namespace gradsync {
namespace {

int AsInt(size_t n) { return static_cast<int>(n); }

// Softmax cross-entropy of `batch` rows of `classes` logits. Adds the
// per-example losses and hits to `sum_loss` and `correct`. When `dlogits`
// is not null, writes d(sum of losses / normalizer)/d(logits) there.
void ScoreLogits(const float* logits, const int32_t* labels, size_t batch,
                 size_t classes, float normalizer, float* dlogits,
                 double* sum_loss, size_t* correct) {
  for (size_t i = 0; i < batch; ++i) {
    const float* z = logits + i * classes;
    size_t best = 0;
    for (size_t j = 1; j < classes; ++j) {
      if (z[j] > z[best]) best = j;
    }
    const float max = z[best];
    float sum = 0.0f;
    for (size_t j = 0; j < classes; ++j) sum += std::exp(z[j] - max);
    const size_t label = static_cast<size_t>(labels[i]);
    *sum_loss += static_cast<double>(max + std::log(sum) - z[label]);
    if (best == label) ++*correct;
    if (dlogits == nullptr) continue;
    float* d = dlogits + i * classes;
    for (size_t j = 0; j < classes; ++j) {
      const float p = std::exp(z[j] - max) / sum;
      d[j] = (j == label ? p - 1.0f : p) / normalizer;
    }
  }
}

}  // namespace

absl::StatusOr<Mlp> Mlp::Create(absl::Span<const size_t> layer_sizes,
                                uint64_t seed) {
  ASSIGN_OR_RETURN(MlpLayout layout, MlpLayout::Create(layer_sizes));
  Mlp mlp(std::move(layout));
  const size_t n = mlp.num_parameters();
  try {
    mlp.params_.resize(n);
    mlp.grads_.assign(n, 0.0f);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate the parameter and gradient buffers of ",
                     n, " floats each"));
  }
  RETURN_IF_ERROR(
      InitializeParameters(mlp.layout_, seed, 0, absl::MakeSpan(mlp.params_)));
  return mlp;
}

void Mlp::ZeroGrads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

absl::Status Mlp::Reserve(size_t batch) {
  if (batch <= reserved_batch_) return absl::OkStatus();
  try {
    activations_.resize(layout_.num_layers());
    for (size_t l = 0; l < layout_.num_layers(); ++l) {
      activations_[l].resize(batch * layout_.layer(l).out);
    }
    for (std::vector<float>& d : delta_) {
      d.resize(batch * layout_.max_width());
    }
    bias_row_.resize(layout_.max_width());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate activations for a batch of ", batch));
  }
  reserved_batch_ = batch;
  return absl::OkStatus();
}

const float* Mlp::Forward(const float* inputs, size_t batch) {
  const float* x = inputs;
  const size_t last = layout_.num_layers() - 1;
  for (size_t l = 0; l <= last; ++l) {
    const LayerSlice& s = layout_.layer(l);
    float* y = activations_[l].data();
    // y[batch][out] = x[batch][in] * W[out][in]^T.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, AsInt(batch),
                AsInt(s.out), AsInt(s.in), 1.0f, x, AsInt(s.in),
                params_.data() + s.weight_offset, AsInt(s.in), 0.0f, y,
                AsInt(s.out));
    const float* b = params_.data() + s.bias_offset;
    for (size_t i = 0; i < batch; ++i) {
      float* row = y + i * s.out;
      for (size_t j = 0; j < s.out; ++j) row[j] += b[j];
      if (l == last) continue;
      for (size_t j = 0; j < s.out; ++j) row[j] = std::max(row[j], 0.0f);
    }
    x = y;
  }
  return x;
}

// delta_[0] holds dLoss/d(logits). Layer l turns its output gradient
// `delta` [batch][out] into
//   dW = delta^T * x   [out][in]   (x: the layer's input)
//   db = column sums of delta
//   dx = (delta * W) masked by ReLU'(x)   [batch][in], for l > 0,
// with beta = 0 (overwrite) or 1 (accumulate) for dW and db. The
// callback runs once dW, db AND dx are written: after it the pass reads
// neither the layer's gradients nor its parameters, which a PS strategy
// may then overwrite with the next step's values (gradient_ready.h).
void Mlp::Backward(const float* inputs, size_t batch, float beta,
                   const GradReadyCallback& ready) {
  int cur = 0;
  for (size_t l = layout_.num_layers(); l-- > 0;) {
    const LayerSlice& s = layout_.layer(l);
    const float* x = l == 0 ? inputs : activations_[l - 1].data();
    const float* delta = delta_[cur].data();
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, AsInt(s.out),
                AsInt(s.in), AsInt(batch), 1.0f, delta, AsInt(s.out), x,
                AsInt(s.in), beta, grads_.data() + s.weight_offset,
                AsInt(s.in));
    std::fill(bias_row_.begin(), bias_row_.begin() + s.out, 0.0f);
    for (size_t i = 0; i < batch; ++i) {
      const float* row = delta + i * s.out;
      for (size_t j = 0; j < s.out; ++j) bias_row_[j] += row[j];
    }
    float* gb = grads_.data() + s.bias_offset;
    for (size_t j = 0; j < s.out; ++j) {
      gb[j] = beta == 0.0f ? bias_row_[j] : gb[j] + bias_row_[j];
    }
    if (l == 0) {
      if (ready) ready(s.begin(), s.end());
      break;
    }
    float* dx = delta_[1 - cur].data();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, AsInt(batch),
                AsInt(s.in), AsInt(s.out), 1.0f, delta, AsInt(s.out),
                params_.data() + s.weight_offset, AsInt(s.in), 0.0f, dx,
                AsInt(s.in));
    const size_t n = batch * s.in;
    for (size_t k = 0; k < n; ++k) {
      if (!(x[k] > 0.0f)) dx[k] = 0.0f;
    }
    if (ready) ready(s.begin(), s.end());
    cur = 1 - cur;
  }
}

absl::StatusOr<BatchMetrics> Mlp::ForwardBackward(
    absl::Span<const float> inputs, absl::Span<const int32_t> labels,
    const ForwardBackwardOptions& options) {
  const size_t batch = labels.size();
  RETURN_IF_ERROR(CheckBatchInputs(inputs, batch, input_size()));
  RETURN_IF_ERROR(CheckLabels(labels, num_classes()));
  BatchMetrics metrics;
  metrics.count = batch;
  if (batch == 0) {
    // Nothing to learn from, but the ranges must still be reported.
    for (size_t l = layout_.num_layers(); l-- > 0;) {
      const LayerSlice& s = layout_.layer(l);
      if (options.mode == GradMode::kOverwrite) {
        std::fill(grads_.begin() + s.begin(), grads_.begin() + s.end(), 0.0f);
      }
      if (options.on_grad_ready) options.on_grad_ready(s.begin(), s.end());
    }
    return metrics;
  }
  RETURN_IF_ERROR(Reserve(batch));
  const float* logits = Forward(inputs.data(), batch);
  const size_t normalizer =
      options.loss_normalizer == 0 ? batch : options.loss_normalizer;
  double sum_loss = 0.0;
  ScoreLogits(logits, labels.data(), batch, num_classes(),
              static_cast<float>(normalizer), delta_[0].data(), &sum_loss,
              &metrics.correct);
  metrics.loss = sum_loss / static_cast<double>(batch);
  Backward(inputs.data(), batch,
           options.mode == GradMode::kAccumulate ? 1.0f : 0.0f,
           options.on_grad_ready);
  return metrics;
}

absl::StatusOr<BatchMetrics> Mlp::Evaluate(absl::Span<const float> inputs,
                                           absl::Span<const int32_t> labels,
                                           size_t batch_size) {
  RETURN_IF_ERROR(CheckEvaluationInputs(inputs, labels, batch_size,
                                        input_size(), num_classes()));
  const size_t n = labels.size();
  const size_t chunk =
      std::min<size_t>({batch_size, n, static_cast<size_t>(INT_MAX)});
  RETURN_IF_ERROR(Reserve(chunk));
  BatchMetrics metrics;
  metrics.count = n;
  double sum_loss = 0.0;
  for (size_t first = 0; first < n; first += chunk) {
    const size_t b = std::min(chunk, n - first);
    const float* logits = Forward(inputs.data() + first * input_size(), b);
    ScoreLogits(logits, labels.data() + first, b, num_classes(), 1.0f, nullptr,
                &sum_loss, &metrics.correct);
  }
  if (n > 0) metrics.loss = sum_loss / static_cast<double>(n);
  return metrics;
}

absl::Status Mlp::Predict(absl::Span<const float> inputs,
                          absl::Span<int32_t> classes) {
  const size_t n = classes.size();
  RETURN_IF_ERROR(CheckBatchInputs(inputs, n, input_size()));
  // Bounded chunks keep the workspace small for large inputs.
  constexpr size_t kChunk = 1024;
  RETURN_IF_ERROR(Reserve(std::min(n, kChunk)));
  const size_t c = num_classes();
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t b = std::min(kChunk, n - first);
    const float* logits = Forward(inputs.data() + first * input_size(), b);
    for (size_t i = 0; i < b; ++i) {
      const float* z = logits + i * c;
      classes[first + i] = static_cast<int32_t>(std::max_element(z, z + c) - z);
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
