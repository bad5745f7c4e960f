#include "worker/model/cuda/cuda_resources.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/cuda/cuda_status.h"

namespace gradsync {
namespace gpu {

// --- DeviceMemory -----------------------------------------------------------

absl::StatusOr<DeviceMemory> DeviceMemory::Allocate(int device, size_t bytes) {
  DeviceMemory memory;
  memory.device_ = device;
  if (bytes == 0) return memory;
  ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  RETURN_IF_ERROR(CudaStatus(
      cudaMalloc(&memory.data_, bytes),
      absl::StrCat("cudaMalloc(", bytes, " bytes) on device ", device)));
  memory.bytes_ = bytes;
  return memory;
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    Release();
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceMemory::~DeviceMemory() { Release(); }

void DeviceMemory::Release() {
  if (data_ == nullptr) return;
  ScopedCudaDevice scoped(device_);
  DiscardCudaError(cudaFree(data_));
  data_ = nullptr;
  bytes_ = 0;
}

// --- PinnedMemory -----------------------------------------------------------

absl::StatusOr<PinnedMemory> PinnedMemory::Allocate(int device, size_t bytes) {
  PinnedMemory memory;
  if (bytes == 0) return memory;
  ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  RETURN_IF_ERROR(CudaStatus(
      cudaMallocHost(&memory.data_, bytes),
      absl::StrCat("cudaMallocHost(", bytes, " bytes) for device ", device)));
  memory.device_ = device;
  memory.bytes_ = bytes;
  return memory;
}

PinnedMemory::PinnedMemory(PinnedMemory&& other) noexcept
    : device_(std::exchange(other.device_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

PinnedMemory& PinnedMemory::operator=(PinnedMemory&& other) noexcept {
  if (this != &other) {
    Release();
    device_ = std::exchange(other.device_, -1);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

PinnedMemory::~PinnedMemory() { Release(); }

void PinnedMemory::Release() {
  if (data_ == nullptr) return;
  ScopedCudaDevice scoped(device_);
  DiscardCudaError(cudaFreeHost(data_));
  device_ = -1;
  data_ = nullptr;
  bytes_ = 0;
}

// --- CudaStream, CudaEvent, CublasHandle -----------------------------------

absl::StatusOr<CudaStream> CudaStream::Create(int device) {
  ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  CudaStream stream;
  stream.set_device(device);
  RETURN_IF_ERROR(CudaStatus(
      cudaStreamCreateWithFlags(stream.handle_slot(), cudaStreamNonBlocking),
      absl::StrCat("cudaStreamCreateWithFlags on device ", device)));
  return stream;
}

absl::StatusOr<CudaEvent> CudaEvent::Create(int device) {
  ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  CudaEvent event;
  event.set_device(device);
  RETURN_IF_ERROR(CudaStatus(
      cudaEventCreateWithFlags(event.handle_slot(), cudaEventDisableTiming),
      absl::StrCat("cudaEventCreateWithFlags on device ", device)));
  return event;
}

absl::StatusOr<CublasHandle> CublasHandle::Create(int device,
                                                  cudaStream_t stream) {
  ScopedCudaDevice scoped(device);
  RETURN_IF_ERROR(scoped.status());
  CublasHandle handle;
  handle.set_device(device);
  RETURN_IF_ERROR(
      CublasStatus(cublasCreate(handle.handle_slot()),
                   absl::StrCat("cublasCreate on device ", device)));
  RETURN_IF_ERROR(
      CublasStatus(cublasSetStream(handle.get(), stream), "cublasSetStream"));
  // Full FP32 GEMMs: TF32 tensor-core math would lose ~3 decimal digits
  // against the CPU model.
  RETURN_IF_ERROR(
      CublasStatus(cublasSetMathMode(handle.get(), CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode(CUBLAS_DEFAULT_MATH)"));
  return handle;
}

}  // namespace gpu
}  // namespace gradsync
