// Owned CUDA resources for the CUDA model: device memory (plain cudaMalloc,
// never managed memory), pinned host memory (cudaMallocHost, the staging
// buffers of asynchronous host<->device copies), a non-blocking stream, an
// event and a cuBLAS handle. Each is move-only and frees its resource on
// destruction with its device made current.
//
// Errors: Create/Allocate return the CUDA/cuBLAS error as a status
// (cuda_status.h): RESOURCE_EXHAUSTED when memory runs out,
// FAILED_PRECONDITION without a usable device.
// Threading: none of these is synchronised; use each from one thread at a
// time. Freeing device memory (cudaFree) waits for the device to finish the
// work that may still use it.
//
// Example:
//   ASSIGN_OR_RETURN(gpu::CudaStream stream, gpu::CudaStream::Create(0));
//   ASSIGN_OR_RETURN(gpu::DeviceMemory buf,
//                    gpu::DeviceMemory::Allocate(0, n * sizeof(float)));
//   float* p = buf.as<float>();
#ifndef GRADSYNC_WORKER_MODEL_CUDA_CUDA_RESOURCES_H_
#define GRADSYNC_WORKER_MODEL_CUDA_CUDA_RESOURCES_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"
#include "common/cuda_status.h"

namespace gradsync {
namespace gpu {

// A block of device memory on one device.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  // `bytes` uninitialised bytes on `device`; 0 bytes gives an empty block.
  [[nodiscard]] static absl::StatusOr<DeviceMemory> Allocate(int device,
                                                             size_t bytes);

  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size_bytes() const { return bytes_; }

 private:
  void Release();

  int device_ = -1;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory, so that cudaMemcpyAsync really is asynchronous.
// Allocated and freed with `device` current (its context owns it; every
// device can copy from it), so that neither makes a context on whatever
// device the calling thread happens to have (device 0 on a fresh thread).
class PinnedMemory {
 public:
  PinnedMemory() = default;
  [[nodiscard]] static absl::StatusOr<PinnedMemory> Allocate(int device,
                                                             size_t bytes);

  PinnedMemory(PinnedMemory&& other) noexcept;
  PinnedMemory& operator=(PinnedMemory&& other) noexcept;
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  ~PinnedMemory();

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size_bytes() const { return bytes_; }

 private:
  void Release();

  int device_ = -1;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A CUDA object (stream, event, cuBLAS handle) created on `device` and
// destroyed by Destroy with that device current; move-only. Destruction
// errors are ignored (nothing could be done about them in a destructor).
template <typename Handle, auto Destroy>
class DeviceHandle {
 public:
  DeviceHandle() = default;
  DeviceHandle(DeviceHandle&& other) noexcept
      : device_(other.device_),
        handle_(std::exchange(other.handle_, nullptr)) {}
  DeviceHandle& operator=(DeviceHandle&& other) noexcept {
    if (this != &other) {
      Release();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  ~DeviceHandle() { Release(); }

  Handle get() const { return handle_; }

 protected:
  // For the owners' Create: the device, and where the handle goes.
  void set_device(int device) { device_ = device; }
  Handle* handle_slot() { return &handle_; }

 private:
  void Release() {
    if (handle_ == nullptr) return;
    ScopedCudaDevice scoped(device_);
    (void)Destroy(handle_);
    // Nor may it resurface in a later kernel-launch check.
    (void)cudaGetLastError();
    handle_ = nullptr;
  }

  int device_ = -1;
  Handle handle_ = nullptr;
};

// A stream that does not synchronise with the legacy default stream.
class CudaStream : public DeviceHandle<cudaStream_t, &cudaStreamDestroy> {
 public:
  [[nodiscard]] static absl::StatusOr<CudaStream> Create(int device);
};

// An event without timing (the cheapest kind), for ordering streams.
class CudaEvent : public DeviceHandle<cudaEvent_t, &cudaEventDestroy> {
 public:
  [[nodiscard]] static absl::StatusOr<CudaEvent> Create(int device);
};

// A cuBLAS handle bound to `stream`, in full-FP32 math (no TF32).
class CublasHandle : public DeviceHandle<cublasHandle_t, &cublasDestroy> {
 public:
  [[nodiscard]] static absl::StatusOr<CublasHandle> Create(int device,
                                                           cudaStream_t stream);
};

}  // namespace gpu
}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_CUDA_RESOURCES_H_
