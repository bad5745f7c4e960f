#include "collectives/nccl/device_buffer.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/nccl/cuda_util.h"
#include "common/status_macros.h"

namespace gradsync {

using nccl_internal::CudaStatus;
using nccl_internal::DiscardCudaError;
using nccl_internal::ScopedCudaDevice;

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  switch (error) {
    case cudaSuccess:
      return count;
    // No GPU or no usable driver: a CPU host, not a failure.
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorSystemNotReady:
      (void)cudaGetLastError();
      return 0;
    default:
      return absl::UnavailableError(
          CudaStatus(error, "cudaGetDeviceCount").message());
  }
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(int device,
                                                    size_t size_bytes) {
  ASSIGN_OR_RETURN(const int count, CudaDeviceCount());
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", device, " does not exist; this process ",
                     "sees ", count, " device(s)"));
  }
  if (size_bytes == 0) return DeviceBuffer(device, nullptr, 0);
  ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  void* data = nullptr;
  RETURN_IF_ERROR(CudaStatus(
      cudaMalloc(&data, size_bytes),
      absl::StrCat("cudaMalloc of ", size_bytes, " bytes on device ", device)));
  return DeviceBuffer(device, data, size_bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(std::exchange(other.device_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    device_ = std::exchange(other.device_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { Release(); }

void DeviceBuffer::Release() {
  if (data_ == nullptr) return;
  ScopedCudaDevice scoped(device_);
  DiscardCudaError(cudaFree(data_));
  data_ = nullptr;
  size_bytes_ = 0;
}

absl::Status DeviceBuffer::CheckRange(size_t bytes, size_t offset) const {
  if (offset > size_bytes_ || bytes > size_bytes_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "range [", offset, ", ", offset, " + ", bytes,
        ") is outside the device buffer of ", size_bytes_, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status DeviceBuffer::CopyFromHost(const void* src, size_t bytes,
                                        size_t offset) {
  RETURN_IF_ERROR(CheckRange(bytes, offset));
  if (bytes == 0) return absl::OkStatus();
  if (src == nullptr) {
    return absl::InvalidArgumentError("CopyFromHost: null host pointer");
  }
  ScopedCudaDevice scoped(device_);
  RETURN_IF_ERROR(scoped.status());
  // Async + synchronise on the legacy stream: a plain cudaMemcpy from
  // pageable memory may return before the DMA lands, and a collective on a
  // non-blocking stream would not wait for it.
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(static_cast<char*>(data_) + offset, src, bytes,
                                 cudaMemcpyHostToDevice, cudaStreamLegacy),
                 "CopyFromHost: cudaMemcpyAsync"));
  return CudaStatus(cudaStreamSynchronize(cudaStreamLegacy),
                    "CopyFromHost: cudaStreamSynchronize");
}

absl::Status DeviceBuffer::CopyToHost(void* dst, size_t bytes,
                                      size_t offset) const {
  RETURN_IF_ERROR(CheckRange(bytes, offset));
  if (bytes == 0) return absl::OkStatus();
  if (dst == nullptr) {
    return absl::InvalidArgumentError("CopyToHost: null host pointer");
  }
  ScopedCudaDevice scoped(device_);
  RETURN_IF_ERROR(scoped.status());
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(dst, static_cast<const char*>(data_) + offset, bytes,
                      cudaMemcpyDeviceToHost, cudaStreamLegacy),
      "CopyToHost: cudaMemcpyAsync"));
  return CudaStatus(cudaStreamSynchronize(cudaStreamLegacy),
                    "CopyToHost: cudaStreamSynchronize");
}

absl::Status DeviceBuffer::Memset(int byte) {
  if (size_bytes_ == 0) return absl::OkStatus();
  ScopedCudaDevice scoped(device_);
  RETURN_IF_ERROR(scoped.status());
  RETURN_IF_ERROR(
      CudaStatus(cudaMemsetAsync(data_, byte, size_bytes_, cudaStreamLegacy),
                 "Memset: cudaMemsetAsync"));
  return CudaStatus(cudaStreamSynchronize(cudaStreamLegacy),
                    "Memset: cudaStreamSynchronize");
}

}  // namespace gradsync
