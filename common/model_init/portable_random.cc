#include "common/model_init/portable_random.h"

#include <numeric>
#include <utility>

namespace gradsync {
namespace {

// The golden-ratio increment of SplitMix64.
constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

}  // namespace

uint64_t SplitMix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64At(uint64_t seed, uint64_t index) {
  // Unsigned overflow wraps, exactly as the sequential generator's state.
  return SplitMix64Mix(seed + (index + 1) * kGamma);
}

uint64_t DeriveSeed(uint64_t seed, uint64_t stream) {
  // Two rounds of mixing so that nearby (seed, stream) pairs land far apart.
  return SplitMix64Mix(SplitMix64Mix(seed ^ 0x6a09e667f3bcc909ULL) +
                       (stream + 1) * kGamma);
}

float BitsToFloat01(uint64_t bits) {
  // 24 bits fill a float's significand exactly: k * 2^-24 is representable.
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

uint64_t SplitMix64::Next() {
  state_ += kGamma;
  return SplitMix64Mix(state_);
}

uint64_t SplitMix64::NextBelow(uint64_t bound) {
  if (bound == 0) return 0;
  // Values below `threshold` = 2^64 mod bound would over-represent the low
  // residues; reject them (at most half the range, usually almost none).
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t r = Next();
    if (r >= threshold) return r % bound;
  }
}

std::vector<size_t> RandomPermutation(size_t n, uint64_t seed) {
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), size_t{0});
  SplitMix64 rng(seed);
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.NextBelow(i));
    std::swap(perm[i - 1], perm[j]);
  }
  return perm;
}

}  // namespace gradsync
