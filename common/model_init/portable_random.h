// Portable pseudo-random numbers for everything that must be bitwise
// identical on every rank, every host and every standard library: parameter
// initialisation and data shuffling.
//
// The C++ <random> engines are portable, but the distributions
// (std::uniform_real_distribution, std::shuffle, ...) are
// implementation-defined, so gradsync draws from SplitMix64 (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", 2014; Vigna's
// reference code) and builds floats, bounded integers and permutations from
// its 64-bit outputs with integer arithmetic only.
//
// SplitMix64 advances its state by a fixed odd constant, so output i of a
// stream is a pure function of (seed, i): SplitMix64At() gives random access,
// which lets a parameter-server shard initialise only its slice of a model.
//
// Errors: none; every function is total. Threading: free functions are pure;
// a SplitMix64 object is a value with no sharing (one per thread).
//
// Example:
//   SplitMix64 rng(DeriveSeed(seed, epoch));
//   float u = rng.NextFloat01();            // [0, 1), 24 random bits
//   std::vector<size_t> perm = RandomPermutation(60000, DeriveSeed(seed, 1));
#ifndef GRADSYNC_COMMON_MODEL_INIT_PORTABLE_RANDOM_H_
#define GRADSYNC_COMMON_MODEL_INIT_PORTABLE_RANDOM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradsync {

// The SplitMix64 output for state `z` (the state after advancing).
uint64_t SplitMix64Mix(uint64_t z);

// Output number `index` (0-based) of the SplitMix64 stream seeded with
// `seed`: SplitMix64(seed) called index+1 times returns the same value.
uint64_t SplitMix64At(uint64_t seed, uint64_t index);

// A seed for sub-stream `stream` of `seed` (per epoch, per layer, ...);
// distinct streams of one seed are statistically independent.
uint64_t DeriveSeed(uint64_t seed, uint64_t stream);

// The float in [0, 1) made of the top 24 bits of `bits` (exact, no rounding).
float BitsToFloat01(uint64_t bits);

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next();
  // Uniform in [0, 1) on the grid k * 2^-24.
  float NextFloat01() { return BitsToFloat01(Next()); }
  // Uniform integer in [0, bound) without modulo bias (rejection sampling);
  // returns 0 when bound is 0.
  uint64_t NextBelow(uint64_t bound);

 private:
  uint64_t state_;
};

// A uniformly random permutation of 0..n-1 (Fisher-Yates, drawing with
// NextBelow from SplitMix64(seed)). Identical on every platform.
std::vector<size_t> RandomPermutation(size_t n, uint64_t seed);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_MODEL_INIT_PORTABLE_RANDOM_H_
