// Helpers of the GPU model tests: the skip on GPU-less hosts, reproducible
// batches and buffers, and float comparisons against the CPU reference.
#ifndef GRADSYNC_TESTS_GPU_GPU_TEST_UTIL_H_
#define GRADSYNC_TESTS_GPU_GPU_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/util/portable_random.h"

namespace gradsync {
namespace gpu_test {

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

// Every GPU case starts here: GPU-less hosts (CI) skip with a clear reason.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::VisibleCudaDeviceCount() == 0) {
      GTEST_SKIP() << "no CUDA device visible";
    }
  }
};

// A reproducible batch: inputs in [-1, 1), labels in [0, classes).
struct TestBatch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

inline TestBatch MakeBatch(size_t batch, size_t features, size_t classes,
                           uint64_t seed) {
  SplitMix64 rng(seed);
  TestBatch b;
  for (size_t i = 0; i < batch * features; ++i) {
    b.x.push_back(2.0f * rng.NextFloat01() - 1.0f);
  }
  for (size_t i = 0; i < batch; ++i) {
    b.y.push_back(static_cast<int32_t>(rng.NextBelow(classes)));
  }
  return b;
}

// n values in [-scale, scale).
inline std::vector<float> RandomVector(size_t n, float scale, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * (2.0f * rng.NextFloat01() - 1.0f);
  return v;
}

inline bool BitwiseEqual(absl::Span<const float> a, absl::Span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// GPU gradients against the CPU reference. The GEMMs add in another order
// (and the ReLU mask of an activation within rounding of 0 may differ), so
// elements match within
//   |gpu - cpu| <= kAbsTol * max|cpu over the slice| + kRelTol * |cpu|.
// A wrong transpose, offset or mask gives errors of the order of the
// values themselves, far above this.
inline constexpr float kAbsTol = 1e-3f;
inline constexpr float kRelTol = 1e-3f;

inline void ExpectNear(absl::Span<const float> gpu, absl::Span<const float> cpu,
                       const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  float scale = 0.0f;
  for (float v : cpu) scale = std::max(scale, std::fabs(v));
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const float tol = kAbsTol * scale + kRelTol * std::fabs(cpu[i]);
    if (!(std::fabs(gpu[i] - cpu[i]) <= tol) && ++bad <= 5) {
      ADD_FAILURE() << what << " at index " << i << ": gpu " << gpu[i]
                    << " cpu " << cpu[i] << " (tolerance " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": elements outside tolerance";
}

}  // namespace gpu_test
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_GPU_GPU_TEST_UTIL_H_
