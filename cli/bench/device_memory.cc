#include "cli/bench/device_memory.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/nccl/device_buffer.h"
#include "common/status_macros.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

class DeviceBenchBuffer : public BenchBuffer {
 public:
  DeviceBenchBuffer(DeviceBuffer device, std::unique_ptr<std::byte[]> host,
                    size_t bytes)
      : device_(std::move(device)), host_(std::move(host)), bytes_(bytes) {}

  void* data() override { return device_.data(); }
  void* host() override { return host_.get(); }
  size_t bytes() const override { return bytes_; }

  [[nodiscard]] absl::Status HostToData(size_t offset, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    return device_.CopyFromHost(host_.get() + offset, bytes, offset);
  }
  [[nodiscard]] absl::Status DataToHost(size_t offset, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    return device_.CopyToHost(host_.get() + offset, bytes, offset);
  }

 private:
  DeviceBuffer device_;
  std::unique_ptr<std::byte[]> host_;
  size_t bytes_;
};

class DeviceMemory : public BenchMemory {
 public:
  explicit DeviceMemory(int device) : device_(device) {}

  [[nodiscard]] absl::StatusOr<std::unique_ptr<BenchBuffer>> Allocate(
      size_t bytes) override {
    const size_t size = std::max<size_t>(bytes, 1);
    ASSIGN_OR_RETURN(DeviceBuffer device,
                     DeviceBuffer::Allocate(device_, size));
    // Value-initialised: the pages are touched here, not in a timed loop.
    auto host = std::make_unique<std::byte[]>(size);
    RETURN_IF_ERROR(device.CopyFromHost(host.get(), size));
    return std::unique_ptr<BenchBuffer>(std::make_unique<DeviceBenchBuffer>(
        std::move(device), std::move(host), bytes));
  }

  std::string Describe() const override {
    std::string description = absl::StrCat("cuda:", device_);
    cudaDeviceProp properties;
    if (cudaGetDeviceProperties(&properties, device_) == cudaSuccess) {
      absl::StrAppend(&description, " [", properties.pciBusID, "] ",
                      properties.name);
    } else {
      cudaGetLastError();  // not sticky; keep it out of later checks
    }
    return description;
  }

 private:
  const int device_;
};

}  // namespace

std::unique_ptr<BenchMemory> MakeDeviceMemory(int device) {
  return std::make_unique<DeviceMemory>(device);
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
