// DeviceBuffer: an owned block of CUDA device memory (cudaMalloc/cudaFree
// on a chosen device) with status-returning host copies, for the NCCL
// backend's tests and the all-reduce benchmark. CudaDeviceCount tells
// whether there is a GPU at all.
//
//   ASSIGN_OR_RETURN(int gpus, CudaDeviceCount());
//   if (gpus == 0) return;  // CPU host: use the TCP backend
//   ASSIGN_OR_RETURN(DeviceBuffer buf,
//                    DeviceBuffer::Allocate(/*device=*/0, n * sizeof(float)));
//   RETURN_IF_ERROR(buf.CopyFromHost(host.data(), n * sizeof(float)));
//   RETURN_IF_ERROR(comm->AllReduce(buf.data(), buf.data(), n,
//                                   DataType::kFloat32, ReduceOp::kSum));
//   RETURN_IF_ERROR(buf.CopyToHost(host.data(), n * sizeof(float)));
//
// Ordering: the copies and Memset are complete when they return, and they
// do not wait for work on other streams (they run on the legacy default
// stream, which does not synchronise with the non-blocking streams the
// NCCL communicator uses). So wait for a collective (Work::Wait) before
// copying its result out, and copy inputs in before issuing it.
//
// Errors: INVALID_ARGUMENT for a bad device or a range outside the buffer;
// RESOURCE_EXHAUSTED when the device is out of memory; UNAVAILABLE when
// there is no usable GPU or driver; INTERNAL for other CUDA failures.
//
// Threading: a DeviceBuffer is not synchronised; use one from one thread at
// a time (distinct buffers may be used concurrently). Every call switches
// the calling thread's current device only for its own duration.
#ifndef GRADSYNC_COLLECTIVES_NCCL_DEVICE_BUFFER_H_
#define GRADSYNC_COLLECTIVES_NCCL_DEVICE_BUFFER_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {

// Number of CUDA devices visible to this process. 0, never an error, when
// there is no GPU or no driver (libcuda absent, driver too old, no device);
// UNAVAILABLE only for unexpected CUDA failures. Never crashes.
[[nodiscard]] absl::StatusOr<int> CudaDeviceCount();

class DeviceBuffer {
 public:
  // An empty buffer (data() == nullptr, size_bytes() == 0).
  DeviceBuffer() = default;
  // Allocates `size_bytes` on `device` (0 bytes gives an empty buffer that
  // remembers its device). Contents are uninitialised.
  [[nodiscard]] static absl::StatusOr<DeviceBuffer> Allocate(int device,
                                                             size_t size_bytes);

  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // Frees the memory. cudaFree waits for work still running on the device;
  // make sure no collective that uses the buffer is pending (or that its
  // communicator was aborted).
  ~DeviceBuffer();

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  int device() const { return device_; }

  // Copies `bytes` from host memory `src` to [offset, offset + bytes) of
  // this buffer.
  [[nodiscard]] absl::Status CopyFromHost(const void* src, size_t bytes,
                                          size_t offset = 0);
  // Copies [offset, offset + bytes) of this buffer to host memory `dst`.
  [[nodiscard]] absl::Status CopyToHost(void* dst, size_t bytes,
                                        size_t offset = 0) const;
  // Sets every byte of the buffer to `byte`.
  [[nodiscard]] absl::Status Memset(int byte);

 private:
  DeviceBuffer(int device, void* data, size_t size_bytes)
      : device_(device), data_(data), size_bytes_(size_bytes) {}
  [[nodiscard]] absl::Status CheckRange(size_t bytes, size_t offset) const;
  void Release();

  int device_ = -1;
  void* data_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_NCCL_DEVICE_BUFFER_H_
