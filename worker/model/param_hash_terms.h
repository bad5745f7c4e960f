// The arithmetic of the parameter fingerprint (worker/train/param_hash.h),
// shared by the host loop and the CUDA kernel (worker/model/cuda/
// param_hash_kernel.cu) so that both give the same value bit for bit:
//
//   word j  = bits(p[2j]) | bits(p[2j+1]) << 32   (a missing p[2j+1] is 0)
//   hash    = Finish(sum over j of Term(word j, j) mod 2^64, n)
//
// Term(word, j) is a bijection of the word: changing any one bit changes
// exactly one term, so the sum changes; it is not linear, so swapped words
// change the sum too (almost surely). Finish mixes the sum and the length
// through SplitMix64's finaliser. The sum does not depend on the
// order it is taken in, so a GPU reduces it in parallel and ships 8 bytes.
// Not cryptographic: it detects divergence, it does not resist forgery.
#ifndef GRADSYNC_WORKER_MODEL_PARAM_HASH_TERMS_H_
#define GRADSYNC_WORKER_MODEL_PARAM_HASH_TERMS_H_

#include <cstdint>

#if defined(__CUDACC__)
#define GRADSYNC_HOST_DEVICE __host__ __device__
#else
#define GRADSYNC_HOST_DEVICE
#endif

namespace gradsync {
namespace param_hash {

inline constexpr uint64_t kIndexStep = 0x9E3779B97F4A7C15ULL;
inline constexpr uint64_t kLengthStep = 0xD1B54A32D192ED03ULL;
inline constexpr uint64_t kTermMultiplier = 0xBF58476D1CE4E5B9ULL;

GRADSYNC_HOST_DEVICE inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The two floats' bit patterns as one word, the first in the low half.
GRADSYNC_HOST_DEVICE inline uint64_t Word(uint32_t first, uint32_t second) {
  return static_cast<uint64_t>(first) | (static_cast<uint64_t>(second) << 32);
}

// One multiply and a shift: a bijection of the word (for a given index),
// and not linear, so that swapping two words changes the sum.
GRADSYNC_HOST_DEVICE inline uint64_t Term(uint64_t word, uint64_t index) {
  const uint64_t z = (word + (index + 1) * kIndexStep) * kTermMultiplier;
  return z ^ (z >> 32);
}

// The hash of `count` floats whose terms sum to `sum`.
GRADSYNC_HOST_DEVICE inline uint64_t Finish(uint64_t sum, uint64_t count) {
  return Mix(sum + (count + 1) * kLengthStep);
}

}  // namespace param_hash
}  // namespace gradsync

#undef GRADSYNC_HOST_DEVICE

#endif  // GRADSYNC_WORKER_MODEL_PARAM_HASH_TERMS_H_
