#include "collectives/half.h"

namespace gradsync {

void FloatsToBFloat16(const float* src, uint16_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToBFloat16(src[i]);
}

void FloatsToFloat16(const float* src, uint16_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToFloat16(src[i]);
}

void BFloat16ToFloats(const uint16_t* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = BFloat16ToFloat(src[i]);
}

void Float16ToFloats(const uint16_t* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Float16ToFloat(src[i]);
}

}  // namespace gradsync
