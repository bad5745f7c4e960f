// Helpers of the GPU model tests: the skip on GPU-less hosts, reproducible
// batches and buffers, and float comparisons against the CPU reference.
#ifndef GRADSYNC_TESTS_GPU_GPU_TEST_UTIL_H_
#define GRADSYNC_TESTS_GPU_GPU_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "common/model_init/mlp_layout.h"
#include "common/model_init/portable_random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/model/cuda/cuda_status.h"

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

// How far the batch keeps every hidden ReLU input from 0, in units of what
// rounding could move it: min over examples and hidden units of
// |z| / (8 * 2^-24 * sqrt(fan-in + 1) * sqrt(b^2 + sum_i (w_i a_i)^2)), z
// the pre-activation, computed in double with the CPU model's parameters.
// CPU and GPU add a layer's products in other orders; where this is below
// 1, their ReLU masks may differ for one example, and a whole row of the
// gradients with them (by more than ExpectNear allows). Tests comparing
// gradients pick a batch where it is at least 1.
inline double ReluMarginInRoundings(const MlpLayout& layout,
                                    absl::Span<const float> params,
                                    const TestBatch& b) {
  const size_t batch = b.y.size();
  double margin = std::numeric_limits<double>::infinity();
  for (size_t e = 0; e < batch; ++e) {
    std::vector<double> a(b.x.begin() + e * layout.input_size(),
                          b.x.begin() + (e + 1) * layout.input_size());
    for (size_t l = 0; l + 1 < layout.num_layers(); ++l) {  // hidden layers
      const LayerSlice& s = layout.layer(l);
      std::vector<double> next(s.out);
      for (size_t o = 0; o < s.out; ++o) {
        const double bias = params[s.bias_offset + o];
        double z = bias;
        double squares = bias * bias;
        for (size_t i = 0; i < s.in; ++i) {
          const double term = params[s.weight_offset + o * s.in + i] * a[i];
          z += term;
          squares += term * term;
        }
        const double rounding = 8.0 * std::ldexp(1.0, -24) *
                                std::sqrt(static_cast<double>(s.in + 1)) *
                                std::sqrt(squares);
        if (rounding > 0) margin = std::min(margin, std::fabs(z) / rounding);
        next[o] = z > 0 ? z : 0.0;
      }
      a = std::move(next);
    }
  }
  return margin;
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
