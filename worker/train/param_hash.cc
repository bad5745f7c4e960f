#include "worker/train/param_hash.h"

#include <cstring>

namespace gradsync {
namespace {

constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;
// Independent FNV-1a lanes over interleaved 64-bit words: one lane is a
// serial chain of multiplies (~4 cycles per 8 bytes); four run in parallel,
// so hashing a large model every step stays memory-bound.
constexpr size_t kLanes = 4;

}  // namespace

uint64_t HashParameters(absl::Span<const float> params) {
  uint64_t lane[kLanes] = {kFnvOffsetBasis, kFnvOffsetBasis + 1,
                           kFnvOffsetBasis + 2, kFnvOffsetBasis + 3};
  const char* bytes = reinterpret_cast<const char*>(params.data());
  const size_t words = params.size() * sizeof(float) / sizeof(uint64_t);
  size_t w = 0;
  for (; w + kLanes <= words; w += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      uint64_t word;
      std::memcpy(&word, bytes + (w + l) * sizeof(word), sizeof(word));
      lane[l] = (lane[l] ^ word) * kFnvPrime;
    }
  }
  uint64_t h = kFnvOffsetBasis;
  for (; w < words; ++w) {
    uint64_t word;
    std::memcpy(&word, bytes + w * sizeof(word), sizeof(word));
    h = (h ^ word) * kFnvPrime;
  }
  if (params.size() % 2 == 1) {
    uint32_t last;
    std::memcpy(&last, &params[params.size() - 1], sizeof(last));
    h = (h ^ last) * kFnvPrime;
  }
  for (uint64_t l : lane) h = (h ^ l) * kFnvPrime;
  return (h ^ static_cast<uint64_t>(params.size())) * kFnvPrime;
}

}  // namespace gradsync
