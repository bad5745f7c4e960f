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

inline float BFloat16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

inline float Float16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    std::memcpy(&bits, &magnitude, sizeof(bits));
    bits |= sign;
  } else if (exponent == 31) {  // infinity or NaN
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The largest finite fp16, 65504, as bits.
inline constexpr uint16_t kFloat16Max = 0x7bff;

inline uint16_t FloatToFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x477ff000u) {  // would round past 65504: clamp
    return static_cast<uint16_t>(sign | kFloat16Max);
  }
  if (magnitude >= 0x38800000u) {  // a normal half (>= 2^-14)
    // Re-bias the exponent (127 -> 15) and round the 13 dropped bits to
    // nearest even.
    const uint32_t rounded =
        magnitude - 0x38000000u + 0x0fffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal (or zero): the nearest multiple of 2^-24, ties to even. The
  // scaling is exact, and adding 2^23 makes the float unit rounding the
  // integer rounding we want (the sum stays below 2^24).
  float scaled;
  std::memcpy(&scaled, &magnitude, sizeof(scaled));
  scaled = scaled * 16777216.0f + 8388608.0f;
  uint32_t scaled_bits;
  std::memcpy(&scaled_bits, &scaled, sizeof(scaled_bits));
  return static_cast<uint16_t>(sign | (scaled_bits & 0x7fffffu));
}

// Bulk conversions for staging a gradient bucket (`dst` and `src` do not
// overlap).
void FloatsToBFloat16(const float* src, uint16_t* dst, size_t count);
void FloatsToFloat16(const float* src, uint16_t* dst, size_t count);
void BFloat16ToFloats(const uint16_t* src, float* dst, size_t count);
void Float16ToFloats(const uint16_t* src, float* dst, size_t count);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_HALF_H_
