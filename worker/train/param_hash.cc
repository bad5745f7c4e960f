#include "worker/train/param_hash.h"

#include <cstring>

#include "worker/model/param_hash_terms.h"

namespace gradsync {
namespace {

uint32_t Bits(const float* f) {
  uint32_t bits;
  std::memcpy(&bits, f, sizeof(bits));
  return bits;
}

// param_hash::Word of p[0] and p[1].
uint64_t WordAt(const float* p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t word;  // the first float is the low half already
  std::memcpy(&word, p, sizeof(word));
  return word;
#else
  return param_hash::Word(Bits(p), Bits(p + 1));
#endif
}

}  // namespace

uint64_t HashParameters(absl::Span<const float> params) {
  const size_t n = params.size();
  const float* p = params.data();
  // param_hash::Term with the index's offset kept as a running sum per
  // lane: the terms are independent, so the loop is bound by memory, not
  // by a chain of multiplies.
  constexpr size_t kLanes = 4;  // independent sums the core overlaps
  const uint64_t step = param_hash::kIndexStep;
  uint64_t sums[kLanes] = {0, 0, 0, 0};
  uint64_t offsets[kLanes] = {step, 2 * step, 3 * step, 4 * step};
  const size_t words = n / 2;
  size_t j = 0;
  for (; j + kLanes <= words; j += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) {
      const uint64_t z =
          (WordAt(p + 2 * (j + l)) + offsets[l]) * param_hash::kTermMultiplier;
      sums[l] += z ^ (z >> 32);
      offsets[l] += kLanes * step;
    }
  }
  uint64_t sum = sums[0] + sums[1] + sums[2] + sums[3];
  for (; j < words; ++j) {
    sum += param_hash::Term(WordAt(p + 2 * j), j);
  }
  if (n % 2 == 1) {
    sum += param_hash::Term(param_hash::Word(Bits(p + n - 1), 0), j);
  }
  return param_hash::Finish(sum, n);
}

}  // namespace gradsync
