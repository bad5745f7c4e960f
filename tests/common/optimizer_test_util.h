// Shared by the optimizer tests: deterministic data and bitwise checks.
#ifndef GRADSYNC_TESTS_COMMON_OPTIMIZER_TEST_UTIL_H_
#define GRADSYNC_TESTS_COMMON_OPTIMIZER_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "common/optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace testing {

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

// Deterministic test data: small dyadic values of both signs.
inline std::vector<float> Pattern(size_t n, uint32_t salt) {
  std::vector<float> v(n);
  uint32_t x = 2463534242u ^ salt;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<float>(static_cast<int>(x % 2001) - 1000) / 512.0f;
  }
  return v;
}

inline OptimizerConfig Config(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.lr = 0.5;
  return c;
}

inline void ExpectBitwiseEqual(const std::vector<float>& want,
                               const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i], got[i]) << "at index " << i;
  }
}

// The state buffers of `got` bitwise those of `want`.
inline void ExpectSameStateBuffers(const OptimizerState& want,
                                   const OptimizerState& got) {
  ASSERT_EQ(want.buffers.size(), got.buffers.size());
  for (size_t i = 0; i < want.buffers.size(); ++i) {
    ExpectBitwiseEqual(want.buffers[i], got.buffers[i]);
  }
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_COMMON_OPTIMIZER_TEST_UTIL_H_
