// Helpers of the NCCL backend tests: GPU detection (tests skip without a
// GPU), running one thread per rank, creating communicators either way
// (thread per rank, or grouped in-process), and exact inputs/checks.
#ifndef GRADSYNC_TESTS_NCCL_NCCL_TEST_UTIL_H_
#define GRADSYNC_TESTS_NCCL_NCCL_TEST_UTIL_H_

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "collectives/communicator.h"
#include "collectives/nccl/device_buffer.h"
#include "collectives/nccl/nccl_communicator.h"
#include "collectives/store.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace nccl_test {

// CUDA devices this process sees; 0 without a GPU or driver.
inline int GpuCount() {
  absl::StatusOr<int> count = CudaDeviceCount();
  return count.ok() ? *count : 0;
}

// Ranks for the multi-rank tests: one per GPU (NCCL puts at most one rank
// of a communicator on a device), at most 4.
inline int TestRanks() { return GpuCount() < 4 ? GpuCount() : 4; }

#define GRADSYNC_SKIP_UNLESS_GPUS(n)                                   \
  do {                                                                 \
    const int gpus_ = ::gradsync::nccl_test::GpuCount();               \
    if (gpus_ < (n)) {                                                 \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s); this host " \
                   << "has " << gpus_;                                 \
    }                                                                  \
  } while (0)

// Runs fn(rank) for rank in [0, n) on n threads and joins them.
inline void RunRanks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

enum class CreateMode { kThreadPerRank, kInProcessGroup };

inline std::string CreateModeName(CreateMode mode) {
  return mode == CreateMode::kThreadPerRank ? "ThreadPerRank"
                                            : "InProcessGroup";
}

// Creates communicators for ranks 0..n-1 of n, rank r on device r.
[[nodiscard]] inline absl::StatusOr<std::vector<std::unique_ptr<Communicator>>>
CreateComms(Store* store, int n, CreateMode mode, const NcclOptions& options) {
  if (mode == CreateMode::kInProcessGroup) {
    std::vector<int> devices;
    for (int r = 0; r < n; ++r) devices.push_back(r);
    return CreateNcclCommunicatorsInProcess(store, 0, n, devices, options);
  }
  std::vector<absl::StatusOr<std::unique_ptr<Communicator>>> results;
  for (int r = 0; r < n; ++r)
    results.emplace_back(absl::UnknownError("not run"));
  RunRanks(n, [&](int r) {
    NcclOptions rank_options = options;
    rank_options.device = r;
    results[r] = CreateNcclCommunicator(store, r, n, rank_options);
  });
  std::vector<std::unique_ptr<Communicator>> comms;
  for (auto& result : results) {
    if (!result.ok()) return result.status();
    comms.push_back(*std::move(result));
  }
  return comms;
}

// Input element i of rank r: a small positive integer, so that every sum
// over up to 4 ranks is exact in float.
template <typename T>
T Value(int rank, size_t i) {
  return static_cast<T>((rank + 1) * static_cast<int>(i % 13 + 1));
}

template <typename T>
std::vector<T> Inputs(int rank, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = Value<T>(rank, i);
  return v;
}

// Uploads `host` into a new buffer on `device` (at least one element, so
// that empty collectives still get a valid pointer).
template <typename T>
DeviceBuffer Upload(int device, const std::vector<T>& host) {
  const size_t bytes = (host.empty() ? 1 : host.size()) * sizeof(T);
  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(device, bytes);
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  if (!buffer.ok()) return DeviceBuffer();
  EXPECT_TRUE(buffer->Memset(0).ok());
  absl::Status copied =
      buffer->CopyFromHost(host.data(), host.size() * sizeof(T));
  EXPECT_TRUE(copied.ok()) << copied;
  return *std::move(buffer);
}

template <typename T>
std::vector<T> Download(const DeviceBuffer& buffer, size_t count) {
  std::vector<T> host(count);
  absl::Status copied = buffer.CopyToHost(host.data(), count * sizeof(T));
  EXPECT_TRUE(copied.ok()) << copied;
  return host;
}

// Expects got == expected exactly, reporting the first mismatch and the
// number of wrong elements (like nccl-tests' #wrong).
template <typename T>
void ExpectExact(const std::vector<T>& expected, const std::vector<T>& got,
                 const std::string& what) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  size_t wrong = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(expected[i] == got[i])) {
      if (wrong++ == 0) first = i;
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ": first mismatch at index " << first
                       << ": expected " << expected[first] << ", got "
                       << got[first];
}

// Raw bytes of a result, for bitwise comparison across ranks.
template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

}  // namespace nccl_test
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_NCCL_NCCL_TEST_UTIL_H_
