#include "cli/bench/bench_memory.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

constexpr std::align_val_t kPageAlignment{4096};

struct AlignedDelete {
  void operator()(std::byte* p) const {
    ::operator delete[](p, kPageAlignment);
  }
};

class HostBuffer : public BenchBuffer {
 public:
  HostBuffer(std::unique_ptr<std::byte[], AlignedDelete> memory, size_t bytes)
      : memory_(std::move(memory)), bytes_(bytes) {}

  void* data() override { return memory_.get(); }
  void* host() override { return memory_.get(); }
  size_t bytes() const override { return bytes_; }
  [[nodiscard]] absl::Status HostToData(size_t offset, size_t bytes) override {
    return CheckRange(offset, bytes);
  }
  [[nodiscard]] absl::Status DataToHost(size_t offset, size_t bytes) override {
    return CheckRange(offset, bytes);
  }

 private:
  [[nodiscard]] absl::Status CheckRange(size_t offset, size_t bytes) const {
    if (offset > bytes_ || bytes > bytes_ - offset) {
      return absl::InvalidArgumentError(
          absl::StrCat("range [", offset, ", +", bytes,
                       ") is outside a buffer of ", bytes_, " bytes"));
    }
    return absl::OkStatus();
  }

  std::unique_ptr<std::byte[], AlignedDelete> memory_;
  size_t bytes_;
};

class HostMemory : public BenchMemory {
 public:
  [[nodiscard]] absl::StatusOr<std::unique_ptr<BenchBuffer>> Allocate(
      size_t bytes) override {
    const size_t size = std::max<size_t>(bytes, 1);
    std::byte* raw = static_cast<std::byte*>(
        ::operator new[](size, kPageAlignment, std::nothrow));
    if (raw == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate ", size, " bytes of host memory"));
    }
    std::unique_ptr<std::byte[], AlignedDelete> memory(raw);
    std::memset(raw, 0, size);
    return std::unique_ptr<BenchBuffer>(
        std::make_unique<HostBuffer>(std::move(memory), bytes));
  }

  std::string Describe() const override { return "cpu"; }
};

}  // namespace

std::unique_ptr<BenchMemory> MakeHostMemory() {
  return std::make_unique<HostMemory>();
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
