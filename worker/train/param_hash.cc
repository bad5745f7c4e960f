#include "worker/train/param_hash.h"

#include <cstring>

namespace gradsync {
namespace {

constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

}  // namespace

uint64_t HashParameters(absl::Span<const float> params) {
  uint64_t h = kFnvOffsetBasis;
  const size_t n = params.size();
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    uint64_t word;
    std::memcpy(&word, &params[i], sizeof(word));
    h = (h ^ word) * kFnvPrime;
  }
  if (i < n) {
    uint32_t last;
    std::memcpy(&last, &params[i], sizeof(last));
    h = (h ^ last) * kFnvPrime;
  }
  return (h ^ static_cast<uint64_t>(n)) * kFnvPrime;
}

}  // namespace gradsync
