// CudaMlp: creation, buffers and host copies. The passes are in
// cuda_mlp_pass.cc.
#include "worker/model/cuda/cuda_mlp.h"

#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/model/cuda/param_hash_kernel.h"
#include "worker/model/param_hash_terms.h"

namespace gradsync {

CudaMlp::~CudaMlp() {
  if (stream_.get() == nullptr) return;  // moved from
  gpu::ScopedCudaDevice scoped(device());
  gpu::DiscardCudaError(cudaStreamSynchronize(stream_.get()));
}

absl::StatusOr<CudaMlp> CudaMlp::Create(absl::Span<const size_t> layer_sizes,
                                        uint64_t seed,
                                        const CudaMlpOptions& options) {
  ASSIGN_OR_RETURN(MlpLayout layout, MlpLayout::Create(layer_sizes));
  RETURN_IF_ERROR(gpu::RequireCudaDevice(options.device, "CudaMlp"));
  const size_t n = layout.num_parameters();
  if (n > SIZE_MAX / sizeof(float)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a model of ", n, " parameters overflows the byte count"));
  }
  // The CPU model's initial values, made by the same code.
  std::vector<float> initial;
  try {
    initial.resize(n);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate the host copy of ", n, " initial parameters"));
  }
  RETURN_IF_ERROR(
      InitializeParameters(layout, seed, 0, absl::MakeSpan(initial)));

  CudaMlp mlp(std::move(layout), options);
  const int device = options.device;
  gpu::ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  ASSIGN_OR_RETURN(mlp.stream_, gpu::CudaStream::Create(device));
  ASSIGN_OR_RETURN(mlp.ready_event_, gpu::CudaEvent::Create(device));
  ASSIGN_OR_RETURN(mlp.staged_event_, gpu::CudaEvent::Create(device));
  ASSIGN_OR_RETURN(mlp.blas_,
                   gpu::CublasHandle::Create(device, mlp.stream_.get()));
  ASSIGN_OR_RETURN(mlp.params_,
                   gpu::DeviceMemory::Allocate(device, n * sizeof(float)));
  ASSIGN_OR_RETURN(mlp.grads_,
                   gpu::DeviceMemory::Allocate(device, n * sizeof(float)));
  ASSIGN_OR_RETURN(mlp.hash_sum_, gpu::DeviceMemory::Allocate(
                                      device, sizeof(unsigned long long)));
  RETURN_IF_ERROR(mlp.CopyParamsFromHost(0, initial));
  RETURN_IF_ERROR(mlp.ZeroGrads());
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaStreamSynchronize(mlp.stream()),
                      "cudaStreamSynchronize (CudaMlp initialisation)"));
  return mlp;
}

absl::Status CudaMlp::CheckRange(size_t begin, size_t size) const {
  if (begin > num_parameters() || size > num_parameters() - begin) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range [", begin, ", ", begin + size,
        ") is outside the flat buffer [0, ", num_parameters(), ")"));
  }
  return absl::OkStatus();
}

namespace {

// A synchronous copy on `stream` (after the work already on it).
[[nodiscard]] absl::Status CopyOnStream(void* dst, const void* src,
                                        size_t bytes, cudaMemcpyKind kind,
                                        cudaStream_t stream,
                                        absl::string_view what) {
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaMemcpyAsync(dst, src, bytes, kind, stream),
                      absl::StrCat("cudaMemcpyAsync (", what, ")")));
  return gpu::CudaStatus(cudaStreamSynchronize(stream),
                         absl::StrCat("cudaStreamSynchronize (", what, ")"));
}

}  // namespace

absl::Status CudaMlp::CopyParamsToHost(size_t begin,
                                       absl::Span<float> out) const {
  RETURN_IF_ERROR(CheckRange(begin, out.size()));
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  return CopyOnStream(out.data(), params_.as<float>() + begin,
                      out.size() * sizeof(float), cudaMemcpyDeviceToHost,
                      stream(), "parameters to host");
}

absl::Status CudaMlp::CopyGradsToHost(size_t begin,
                                      absl::Span<float> out) const {
  RETURN_IF_ERROR(CheckRange(begin, out.size()));
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  return CopyOnStream(out.data(), grads_.as<float>() + begin,
                      out.size() * sizeof(float), cudaMemcpyDeviceToHost,
                      stream(), "gradients to host");
}

absl::Status CudaMlp::CopyParamsFromHost(size_t begin,
                                         absl::Span<const float> in) {
  RETURN_IF_ERROR(CheckRange(begin, in.size()));
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  return CopyOnStream(params_.as<float>() + begin, in.data(),
                      in.size() * sizeof(float), cudaMemcpyHostToDevice,
                      stream(), "parameters from host");
}

absl::Status CudaMlp::ZeroGrads() {
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  if (num_parameters() == 0) return absl::OkStatus();
  return gpu::CudaStatus(
      cudaMemsetAsync(grads_.data(), 0, num_parameters() * sizeof(float),
                      stream()),
      "cudaMemsetAsync (zero gradients)");
}

absl::StatusOr<uint64_t> CudaMlp::HashParams() {
  gpu::ScopedCudaDevice scoped(device());
  RETURN_IF_ERROR(scoped.status());
  auto* sum = hash_sum_.as<unsigned long long>();
  RETURN_IF_ERROR(
      gpu::CudaStatus(gpu::LaunchParamHashSum(params_.as<float>(),
                                              num_parameters(), sum, stream()),
                      "parameter hash kernel"));
  unsigned long long host_sum = 0;
  RETURN_IF_ERROR(CopyOnStream(&host_sum, sum, sizeof(host_sum),
                               cudaMemcpyDeviceToHost, stream(),
                               "parameter hash to host"));
  return param_hash::Finish(host_sum, num_parameters());
}

absl::Status CudaMlp::Reserve(size_t batch) {
  if (batch <= reserved_batch_) return absl::OkStatus();
  // Release the old workspace first (cudaFree waits for work using it),
  // and leave reserved_batch_ at 0 until everything is allocated again.
  reserved_batch_ = 0;
  RETURN_IF_ERROR(
      gpu::CudaStatus(cudaStreamSynchronize(stream()),
                      "cudaStreamSynchronize (before resizing the workspace)"));
  activations_.clear();
  inputs_ = gpu::DeviceMemory();
  for (gpu::DeviceMemory& d : delta_) d = gpu::DeviceMemory();
  staged_inputs_ = gpu::PinnedMemory();
  const int dev = device();
  const size_t in = input_size();
  const size_t width = layout_.max_width();
  // The largest product below is batch * max(in, width) floats.
  const size_t widest = in > width ? in : width;
  if (widest > SIZE_MAX / sizeof(float) / batch) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a workspace of ", batch, " x ", widest, " floats overflows size_t"));
  }
  ASSIGN_OR_RETURN(
      inputs_, gpu::DeviceMemory::Allocate(dev, batch * in * sizeof(float)));
  ASSIGN_OR_RETURN(labels_,
                   gpu::DeviceMemory::Allocate(dev, batch * sizeof(int32_t)));
  for (size_t l = 0; l < layout_.num_layers(); ++l) {
    ASSIGN_OR_RETURN(gpu::DeviceMemory a,
                     gpu::DeviceMemory::Allocate(
                         dev, batch * layout_.layer(l).out * sizeof(float)));
    activations_.push_back(std::move(a));
  }
  for (gpu::DeviceMemory& d : delta_) {
    ASSIGN_OR_RETURN(
        d, gpu::DeviceMemory::Allocate(dev, batch * width * sizeof(float)));
  }
  ASSIGN_OR_RETURN(loss_,
                   gpu::DeviceMemory::Allocate(dev, batch * sizeof(float)));
  ASSIGN_OR_RETURN(correct_,
                   gpu::DeviceMemory::Allocate(dev, batch * sizeof(int32_t)));
  ASSIGN_OR_RETURN(staged_inputs_, gpu::PinnedMemory::Allocate(
                                       dev, batch * in * sizeof(float)));
  ASSIGN_OR_RETURN(staged_labels_,
                   gpu::PinnedMemory::Allocate(dev, batch * sizeof(int32_t)));
  ASSIGN_OR_RETURN(host_loss_,
                   gpu::PinnedMemory::Allocate(dev, batch * sizeof(float)));
  ASSIGN_OR_RETURN(host_correct_,
                   gpu::PinnedMemory::Allocate(dev, batch * sizeof(int32_t)));
  reserved_batch_ = batch;
  return absl::OkStatus();
}

}  // namespace gradsync
