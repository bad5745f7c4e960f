// 16-bit floating point for gradients on the wire: bfloat16 (fp32's
// exponent, 8 significant bits) and IEEE half (fp16: 5 exponent bits, 11
// significant bits, largest finite 65504).
//
// Conversions to 16 bits round to nearest, ties to even, as PyTorch's
// `.to(torch.bfloat16)` and `.half()` do, so a value a 16-bit type can hold
// converts exactly both ways. NaN stays NaN (quiet) and infinities stay
// infinite. fp16 clamps: a finite value beyond the largest finite half
// becomes +-65504 rather than infinity, the "loss-scale-free clamp" that
// lets gradients go 16-bit without a loss scale (a gradient that large is
// clipped, not lost); bfloat16 has fp32's range and needs none.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COLLECTIVES_HALF_H_
#define GRADSYNC_COLLECTIVES_HALF_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gradsync {

// Every conversion below is branch-free: each case (NaN, infinity, clamp,
// normal, subnormal) is computed and the right one selected, so that GCC
// vectorizes the bulk loops in half.cc (compare, blend and shift on 32-bit
// lanes) instead of running one branchy element at a time. The results are
// bit for bit those of the plain case-by-case code the tests keep as their
// reference (tests/collectives/half_test.cc).

inline uint32_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

inline float BitsFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// `yes` where `condition` holds, else `no`, as masks: a chain of these stays
// straight-line code where a chain of `?:` can become branches.
inline uint32_t Select(bool condition, uint32_t yes, uint32_t no) {
  const uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (yes & mask) | (no & ~mask);
}

inline float BFloat16ToFloat(uint16_t h) {
  return BitsFloat(static_cast<uint32_t>(h) << 16);
}

inline uint16_t FloatToBFloat16(float f) {
  const uint32_t bits = FloatBits(f);
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  // Round to nearest even: add half an ulp less one, plus the kept lsb.
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(nan ? quiet_nan : rounded);
}

inline float Float16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t shifted = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exponent = shifted & 0x0f800000u;
  // Normal: re-bias the exponent (15 -> 127). Infinity or NaN: exponent 255,
  // the payload kept.
  const uint32_t normal = shifted + (112u << 23);
  const uint32_t special = shifted + (224u << 23);
  // Zero or subnormal, mantissa * 2^-24 exactly: 2^-14 * (1 + m / 1024)
  // minus 2^-14.
  const uint32_t subnormal =
      FloatBits(BitsFloat(shifted + (113u << 23)) - BitsFloat(113u << 23));
  const uint32_t magnitude =
      Select(exponent == 0, subnormal,
             Select(exponent == 0x0f800000u, special, normal));
  return BitsFloat(sign | magnitude);
}

// The largest finite fp16, 65504, as bits.
inline constexpr uint16_t kFloat16Max = 0x7bff;

inline uint16_t FloatToFloat16(float f) {
  const uint32_t bits = FloatBits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  const uint32_t nan = 0x7e00u | ((magnitude >> 13) & 0x3ffu);
  // A normal half (>= 2^-14): re-bias the exponent (127 -> 15) and round
  // the 13 dropped bits to nearest even.
  const uint32_t normal =
      (magnitude - 0x38000000u + 0x0fffu + ((magnitude >> 13) & 1u)) >> 13;
  // Subnormal (or zero): the nearest multiple of 2^-24, ties to even. The
  // scaling is exact, and adding 2^23 makes the float unit rounding the
  // integer rounding we want (the sum stays below 2^24).
  const uint32_t subnormal =
      FloatBits(BitsFloat(magnitude) * 16777216.0f + 8388608.0f) & 0x7fffffu;
  // Past 0x477ff000 a finite value would round beyond 65504: clamp.
  const uint32_t finite =
      Select(magnitude >= 0x477ff000u, kFloat16Max,
             Select(magnitude >= 0x38800000u, normal, subnormal));
  const uint32_t half =
      Select(magnitude > 0x7f800000u, nan,
             Select(magnitude == 0x7f800000u, 0x7c00u, finite));
  return static_cast<uint16_t>(sign | half);
}

// Bulk conversions for staging a gradient bucket (`dst` and `src` do not
// overlap).
void FloatsToBFloat16(const float* src, uint16_t* dst, size_t count);
void FloatsToFloat16(const float* src, uint16_t* dst, size_t count);
void BFloat16ToFloats(const uint16_t* src, float* dst, size_t count);
void Float16ToFloats(const uint16_t* src, float* dst, size_t count);

// The ring's 16-bit reduction, fused: dst[i] = round(widen(a[i]) +
// widen(b[i])), one pass, each sum rounded once. `dst` may be `a` itself
// (the in-place ring) or disjoint from both inputs; any other overlap runs
// element by element in order, still correct.
void AddBFloat16(const uint16_t* a, const uint16_t* b, uint16_t* dst,
                 size_t count);
void AddFloat16(const uint16_t* a, const uint16_t* b, uint16_t* dst,
                size_t count);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_HALF_H_
