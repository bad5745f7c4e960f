#include "worker/model/cuda/cuda_optimizer.h"

#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/model/cuda/optimizer_kernels.h"

// Compiled with -ffp-contract=off, as common/optimizer.cc: the host-side
// scalars below must round exactly as Optimizer's.

namespace gradsync {
namespace {

gpu::AdamScalars AdamScalarsFor(const OptimizerConfig& c, uint64_t t) {
  gpu::AdamScalars s;
  static_cast<AdamStepScalars&>(s) = AdamStepScalarsAt(c, t);
  s.decoupled = c.kind == OptimizerKind::kAdamW;
  return s;
}

}  // namespace

absl::StatusOr<CudaOptimizer> CudaOptimizer::Create(
    const OptimizerConfig& config, size_t size, int device) {
  RETURN_IF_ERROR(ValidateOptimizerConfig(config));
  if (config.kind == OptimizerKind::kSum) {
    return absl::InvalidArgumentError(
        "the sum optimizer is the torch PS path's, on the shards only");
  }
  RETURN_IF_ERROR(gpu::RequireCudaDevice(device, "CudaOptimizer"));
  CudaOptimizer opt(config, size, device);
  gpu::ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  const size_t bytes = size * sizeof(float);
  if (size != 0 && bytes / size != sizeof(float)) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer size ", size, " overflows the byte count"));
  }
  for (size_t i = 0; i < NumStateBuffers(config.kind); ++i) {
    ASSIGN_OR_RETURN(gpu::DeviceMemory buf,
                     gpu::DeviceMemory::Allocate(device, bytes));
    if (bytes > 0) {
      RETURN_IF_ERROR(gpu::CudaStatus(
          cudaMemsetAsync(buf.data(), 0, bytes, cudaStreamLegacy),
          absl::StrCat("cudaMemsetAsync (optimizer state buffer ", i, ")")));
    }
    opt.buffers_.push_back(std::move(buf));
  }
  // The zeroing ran on the legacy stream, which does not order with the
  // caller's non-blocking streams: finish it here.
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaStreamSynchronize(cudaStreamLegacy),
                      "cudaStreamSynchronize (optimizer state zeroing)"));
  return opt;
}

absl::StatusOr<CudaOptimizer> CudaOptimizer::CreateByName(
    absl::string_view name, OptimizerConfig config, size_t size, int device) {
  ASSIGN_OR_RETURN(config.kind, ParseOptimizerKind(name));
  return Create(config, size, device);
}

absl::Status CudaOptimizer::CheckDeviceSpan(const void* data, size_t n,
                                            absl::string_view what) const {
  if (n != size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA optimizer step over ", size_, " parameters got ", n, " ", what));
  }
  if (n == 0) return absl::OkStatus();
  cudaPointerAttributes attributes{};
  RETURN_IF_ERROR(gpu::CudaStatus(
      cudaPointerGetAttributes(&attributes, data),
      absl::StrCat("cudaPointerGetAttributes (optimizer ", what, ")")));
  if (attributes.type != cudaMemoryTypeDevice &&
      attributes.type != cudaMemoryTypeManaged) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA optimizer step: the ", what,
                     " are not in CUDA device memory (pass the model's "
                     "device buffers, not host memory)"));
  }
  if (attributes.device != device_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA optimizer step: the ", what, " live on CUDA device ",
        attributes.device, " but this optimizer runs on device ", device_));
  }
  return absl::OkStatus();
}

absl::Status CudaOptimizer::Step(absl::Span<float> params,
                                 absl::Span<const float> grads,
                                 cudaStream_t stream) {
  RETURN_IF_ERROR(CheckDeviceSpan(params.data(), params.size(), "parameters"));
  RETURN_IF_ERROR(CheckDeviceSpan(grads.data(), grads.size(), "gradients"));
  if (FloatSpansOverlap(params.data(), params.size(), grads.data(),
                        grads.size())) {
    return absl::InvalidArgumentError(
        "CUDA optimizer step: parameter and gradient buffers overlap");
  }
  gpu::ScopedCudaDevice scoped(device_);
  RETURN_IF_ERROR(scoped.status());
  float* p = params.data();
  const float* g = grads.data();
  const OptimizerConfig& c = config_;
  cudaError_t error = cudaSuccess;
  switch (c.kind) {
    case OptimizerKind::kSgd: {
      gpu::SgdScalars s;
      s.neg_lr = static_cast<float>(-c.lr);
      s.wd = static_cast<float>(c.weight_decay);
      error = gpu::LaunchSgdStep(s, p, g, size_, stream);
      break;
    }
    case OptimizerKind::kMomentum: {
      gpu::MomentumScalars s;
      s.neg_lr = static_cast<float>(-c.lr);
      s.wd = static_cast<float>(c.weight_decay);
      s.mu = static_cast<float>(c.momentum);
      s.keep = static_cast<float>(1.0 - c.dampening);
      s.nesterov = c.nesterov;
      s.first_step = step_ == 0;
      error = gpu::LaunchMomentumStep(s, p, g, buffers_[0].as<float>(), size_,
                                      stream);
      break;
    }
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      error = gpu::LaunchAdamStep(AdamScalarsFor(c, step_ + 1), p, g,
                                  buffers_[0].as<float>(),
                                  buffers_[1].as<float>(), size_, stream);
      break;
    case OptimizerKind::kSum:  // refused by Create
      return absl::InternalError("CUDA optimizer of kind sum");
  }
  RETURN_IF_ERROR(gpu::CudaStatus(
      error, absl::StrCat(OptimizerKindName(c.kind), " optimizer kernel launch",
                          " (step ", step_ + 1, ")")));
  ++step_;
  return absl::OkStatus();
}

absl::Status CudaOptimizer::SetLearningRate(double lr) {
  OptimizerConfig next = config_;
  next.lr = lr;
  RETURN_IF_ERROR(ValidateOptimizerConfig(next));
  config_ = next;
  return absl::OkStatus();
}

absl::Span<const float> CudaOptimizer::device_state_buffer(size_t i) const {
  if (i >= buffers_.size()) return {};
  return absl::Span<const float>(buffers_[i].as<float>(), size_);
}

absl::StatusOr<OptimizerState> CudaOptimizer::ExportState(
    cudaStream_t stream) const {
  OptimizerState state;
  state.kind = config_.kind;
  state.step = step_;
  state.size = size_;
  try {
    state.buffers.assign(buffers_.size(), std::vector<float>(size_));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a host copy of the optimizer state of ",
                     size_, " parameters"));
  }
  gpu::ScopedCudaDevice scoped(device_);
  RETURN_IF_ERROR(scoped.status());
  for (size_t i = 0; i < buffers_.size() && size_ > 0; ++i) {
    RETURN_IF_ERROR(gpu::CudaStatus(
        cudaMemcpyAsync(state.buffers[i].data(), buffers_[i].data(),
                        size_ * sizeof(float), cudaMemcpyDeviceToHost, stream),
        absl::StrCat("cudaMemcpyAsync (export optimizer state buffer ", i,
                     ")")));
  }
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaStreamSynchronize(stream),
                      "cudaStreamSynchronize (export optimizer state)"));
  return state;
}

absl::Status CudaOptimizer::ImportState(const OptimizerState& state,
                                        cudaStream_t stream) {
  RETURN_IF_ERROR(ValidateOptimizerState(state));
  if (state.kind != config_.kind || state.size != size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer state is ", OptimizerKindName(state.kind), " over ",
        state.size, " parameters; this CUDA optimizer is ",
        OptimizerKindName(config_.kind), " over ", size_));
  }
  gpu::ScopedCudaDevice scoped(device_);
  RETURN_IF_ERROR(scoped.status());
  for (size_t i = 0; i < buffers_.size() && size_ > 0; ++i) {
    RETURN_IF_ERROR(gpu::CudaStatus(
        cudaMemcpyAsync(buffers_[i].data(), state.buffers[i].data(),
                        size_ * sizeof(float), cudaMemcpyHostToDevice, stream),
        absl::StrCat("cudaMemcpyAsync (import optimizer state buffer ", i,
                     ")")));
  }
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaStreamSynchronize(stream),
                      "cudaStreamSynchronize (import optimizer state)"));
  step_ = state.step;
  return absl::OkStatus();
}

}  // namespace gradsync
