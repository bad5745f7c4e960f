// CudaMlp: the forward, backward and evaluation passes.
//
// cuBLAS is column-major; the model's matrices are row-major. A row-major
// [r][c] matrix is, read column-major, its transpose [c][r] with leading
// dimension c, so every product below is written for the transposes:
//   forward   Y[B][out] = X[B][in] W[out][in]^T   <=>  Y^T = W X^T
//             = gemm(T, N, m=out, n=B, k=in, A=W (ld in), B=X (ld in))
//   weights   dW[out][in] = D[B][out]^T X[B][in]   <=>  dW^T = X^T D
//             = gemm(N, T, m=in, n=out, k=B, A=X (ld in), B=D (ld out))
//   inputs    dX[B][in] = D[B][out] W[out][in]    <=>  dX^T = W^T D^T
//             = gemm(N, N, m=in, n=B, k=out, A=W (ld in), B=D (ld out))
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/batch_checks.h"
#include "worker/model/cuda/cuda_mlp.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/model/cuda/mlp_kernels.h"

namespace gradsync {
namespace {

int AsInt(size_t n) { return static_cast<int>(n); }

std::string LayerContext(absl::string_view call, size_t l,
                         absl::string_view what) {
  return absl::StrCat(call, " (layer ", l, ", ", what, ")");
}

}  // namespace

absl::Status CudaMlp::Upload(const float* inputs, const int32_t* labels,
                             size_t batch) {
  // Wait until the previous upload has left the staging buffers (an event
  // never recorded completes at once).
  RETURN_IF_ERROR(gpu::CudaStatus(cudaEventSynchronize(staged_event_.get()),
                                  "cudaEventSynchronize (previous upload)"));
  const size_t x_bytes = batch * input_size() * sizeof(float);
  const size_t y_bytes = batch * sizeof(int32_t);
  std::memcpy(staged_inputs_.data(), inputs, x_bytes);
  std::memcpy(staged_labels_.data(), labels, y_bytes);
  RETURN_IF_ERROR(gpu::CudaStatus(
      cudaMemcpyAsync(inputs_.data(), staged_inputs_.data(), x_bytes,
                      cudaMemcpyHostToDevice, stream()),
      "cudaMemcpyAsync (inputs to device)"));
  RETURN_IF_ERROR(gpu::CudaStatus(
      cudaMemcpyAsync(labels_.data(), staged_labels_.data(), y_bytes,
                      cudaMemcpyHostToDevice, stream()),
      "cudaMemcpyAsync (labels to device)"));
  return gpu::CudaStatus(cudaEventRecord(staged_event_.get(), stream()),
                         "cudaEventRecord (upload)");
}

absl::Status CudaMlp::Forward(size_t batch) {
  const float one = 1.0f;
  const float zero = 0.0f;
  const float* x = inputs_.as<float>();
  const float* params = params_.as<float>();
  const size_t last = layout_.num_layers() - 1;
  for (size_t l = 0; l <= last; ++l) {
    const LayerSlice& s = layout_.layer(l);
    float* y = activations_[l].as<float>();
    RETURN_IF_ERROR(gpu::CublasStatus(
        cublasSgemm(blas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, AsInt(s.out),
                    AsInt(batch), AsInt(s.in), &one, params + s.weight_offset,
                    AsInt(s.in), x, AsInt(s.in), &zero, y, AsInt(s.out)),
        LayerContext("cublasSgemm", l, "forward Y = X W^T")));
    RETURN_IF_ERROR(gpu::CudaStatus(
        gpu::LaunchBiasActivation(y, params + s.bias_offset, batch, s.out,
                                  /*relu=*/l != last, stream()),
        LayerContext("bias/ReLU kernel launch", l, "forward")));
    x = y;
  }
  return absl::OkStatus();
}

absl::Status CudaMlp::Score(size_t batch, float normalizer,
                            bool with_gradient) {
  RETURN_IF_ERROR(gpu::CudaStatus(
      gpu::LaunchSoftmaxCrossEntropy(
          activations_.back().as<float>(), labels_.as<int32_t>(), batch,
          num_classes(), normalizer,
          with_gradient ? delta_[0].as<float>() : nullptr, loss_.as<float>(),
          correct_.as<int32_t>(), stream()),
      "softmax cross-entropy kernel launch"));
  // Read back while backward runs; the pass synchronises before Tally.
  RETURN_IF_ERROR(gpu::CudaStatus(
      cudaMemcpyAsync(host_loss_.data(), loss_.data(), batch * sizeof(float),
                      cudaMemcpyDeviceToHost, stream()),
      "cudaMemcpyAsync (per-example loss to host)"));
  return gpu::CudaStatus(cudaMemcpyAsync(host_correct_.data(), correct_.data(),
                                         batch * sizeof(int32_t),
                                         cudaMemcpyDeviceToHost, stream()),
                         "cudaMemcpyAsync (per-example hits to host)");
}

void CudaMlp::Tally(size_t batch, double* sum_loss,
                    BatchMetrics* metrics) const {
  // In example order, in double, as the CPU model adds them.
  const float* loss = host_loss_.as<float>();
  const int32_t* correct = host_correct_.as<int32_t>();
  for (size_t i = 0; i < batch; ++i) {
    *sum_loss += static_cast<double>(loss[i]);
    if (correct[i] != 0) ++metrics->correct;
  }
}

absl::Status CudaMlp::ReportReady(size_t l, const GradReadyCallback& ready) {
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaEventRecord(ready_event_.get(), stream()),
                      LayerContext("cudaEventRecord", l, "gradients ready")));
  if (options_.ready_ordering == ReadyOrdering::kHostSynchronized) {
    RETURN_IF_ERROR(
        gpu::CudaStatus(cudaEventSynchronize(ready_event_.get()),
                        LayerContext("cudaEventSynchronize", l, "backward")));
  }
  const LayerSlice& s = layout_.layer(l);
  if (ready) ready(s.begin(), s.end());
  return absl::OkStatus();
}

// Layer l turns its output gradient D = delta_[cur] [B][out] into dW, db
// (beta = 0 overwrites, 1 accumulates) and, for l > 0, the masked input
// gradient in delta_[1 - cur]. Its range is reported after all three are
// enqueued: later work reads neither its gradients nor its parameters.
absl::Status CudaMlp::Backward(size_t batch, bool accumulate,
                               const GradReadyCallback& ready) {
  const float one = 1.0f;
  const float zero = 0.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  const float* params = params_.as<float>();
  float* grads = grads_.as<float>();
  int cur = 0;
  for (size_t l = layout_.num_layers(); l-- > 0;) {
    const LayerSlice& s = layout_.layer(l);
    const float* x =
        l == 0 ? inputs_.as<float>() : activations_[l - 1].as<float>();
    const float* delta = delta_[cur].as<float>();
    RETURN_IF_ERROR(gpu::CublasStatus(
        cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, AsInt(s.in),
                    AsInt(s.out), AsInt(batch), &one, x, AsInt(s.in), delta,
                    AsInt(s.out), &beta, grads + s.weight_offset, AsInt(s.in)),
        LayerContext("cublasSgemm", l, "backward dW = D^T X")));
    RETURN_IF_ERROR(gpu::CudaStatus(
        gpu::LaunchColumnSums(delta, batch, s.out, accumulate,
                              grads + s.bias_offset, stream()),
        LayerContext("column-sum kernel launch", l, "backward db")));
    if (l > 0) {
      float* dx = delta_[1 - cur].as<float>();
      RETURN_IF_ERROR(gpu::CublasStatus(
          cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, AsInt(s.in),
                      AsInt(batch), AsInt(s.out), &one,
                      params + s.weight_offset, AsInt(s.in), delta,
                      AsInt(s.out), &zero, dx, AsInt(s.in)),
          LayerContext("cublasSgemm", l, "backward dX = D W")));
      RETURN_IF_ERROR(gpu::CudaStatus(
          gpu::LaunchReluMask(dx, x, batch * s.in, stream()),
          LayerContext("ReLU-mask kernel launch", l, "backward")));
    }
    RETURN_IF_ERROR(ReportReady(l, ready));
    cur = 1 - cur;
  }
  return absl::OkStatus();
}

absl::StatusOr<BatchMetrics> CudaMlp::ForwardBackward(
    absl::Span<const float> inputs, absl::Span<const int32_t> labels,
    const ForwardBackwardOptions& options) {
  const size_t batch = labels.size();
  RETURN_IF_ERROR(CheckBatchInputs(inputs, batch, input_size()));
  RETURN_IF_ERROR(CheckLabels(labels, num_classes()));
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  BatchMetrics metrics;
  metrics.count = batch;
  if (batch == 0) {
    // Nothing to learn from, but every range must still be reported.
    for (size_t l = layout_.num_layers(); l-- > 0;) {
      const LayerSlice& s = layout_.layer(l);
      if (options.mode == GradMode::kOverwrite) {
        RETURN_IF_ERROR(gpu::CudaStatus(
            cudaMemsetAsync(grads_.as<float>() + s.begin(), 0,
                            (s.end() - s.begin()) * sizeof(float), stream()),
            LayerContext("cudaMemsetAsync", l, "zero gradients")));
      }
      RETURN_IF_ERROR(ReportReady(l, options.on_grad_ready));
    }
    RETURN_IF_ERROR(gpu::CudaStatus(cudaStreamSynchronize(stream()),
                                    "cudaStreamSynchronize (empty batch)"));
    return metrics;
  }
  RETURN_IF_ERROR(Reserve(batch));
  RETURN_IF_ERROR(Upload(inputs.data(), labels.data(), batch));
  RETURN_IF_ERROR(Forward(batch));
  const size_t normalizer =
      options.loss_normalizer == 0 ? batch : options.loss_normalizer;
  RETURN_IF_ERROR(Score(batch, static_cast<float>(normalizer), true));
  RETURN_IF_ERROR(Backward(batch, options.mode == GradMode::kAccumulate,
                           options.on_grad_ready));
  RETURN_IF_ERROR(gpu::CudaStatus(cudaStreamSynchronize(stream()),
                                  "cudaStreamSynchronize (end of backward)"));
  double sum_loss = 0.0;
  Tally(batch, &sum_loss, &metrics);
  metrics.loss = sum_loss / static_cast<double>(batch);
  return metrics;
}

absl::StatusOr<BatchMetrics> CudaMlp::Evaluate(absl::Span<const float> inputs,
                                               absl::Span<const int32_t> labels,
                                               size_t batch_size) {
  RETURN_IF_ERROR(CheckEvaluationInputs(inputs, labels, batch_size,
                                        input_size(), num_classes()));
  const size_t n = labels.size();
  BatchMetrics metrics;
  metrics.count = n;
  if (n == 0) return metrics;
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  const size_t chunk =
      std::min<size_t>({batch_size, n, static_cast<size_t>(INT_MAX)});
  RETURN_IF_ERROR(Reserve(chunk));
  double sum_loss = 0.0;
  for (size_t first = 0; first < n; first += chunk) {
    const size_t b = std::min(chunk, n - first);
    RETURN_IF_ERROR(
        Upload(inputs.data() + first * input_size(), labels.data() + first, b));
    RETURN_IF_ERROR(Forward(b));
    RETURN_IF_ERROR(Score(b, 1.0f, /*with_gradient=*/false));
    RETURN_IF_ERROR(gpu::CudaStatus(
        cudaStreamSynchronize(stream()),
        absl::StrCat("cudaStreamSynchronize (evaluation of examples ", first,
                     "..", first + b, ")")));
    Tally(b, &sum_loss, &metrics);
  }
  metrics.loss = sum_loss / static_cast<double>(n);
  return metrics;
}

}  // namespace gradsync
