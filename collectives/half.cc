// The bulk 16-bit kernels: conversions for staging a gradient bucket and the
// ring's fused widen-add-round. Each loop body is the branch-free scalar
// conversion of half.h, which GCC vectorizes (this library builds at -O3);
// on x86-64 each kernel is also cloned for AVX2 and AVX-512 and the loader
// picks the widest the CPU has (ifunc), so the same binary runs everywhere.
// The pointers are `__restrict`: callers pass disjoint buffers, or the
// in-place form below. Pure functions; thread-safe.
#include "collectives/half.h"

namespace gradsync {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__ELF__)
#define GRADSYNC_VECTOR_CLONES \
  __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#else
#define GRADSYNC_VECTOR_CLONES
#endif

template <uint16_t (*FromFloat)(float)>
inline void Narrow(const float* __restrict src, uint16_t* __restrict dst,
                   size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FromFloat(src[i]);
}

template <float (*ToFloat)(uint16_t)>
inline void Widen(const uint16_t* __restrict src, float* __restrict dst,
                  size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = ToFloat(src[i]);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
inline void AddDisjoint(const uint16_t* __restrict a,
                        const uint16_t* __restrict b, uint16_t* __restrict dst,
                        size_t count) {
  for (size_t i = 0; i < count; ++i) {
    dst[i] = FromFloat(ToFloat(a[i]) + ToFloat(b[i]));
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
inline void AddInPlace(uint16_t* __restrict acc, const uint16_t* __restrict b,
                       size_t count) {
  for (size_t i = 0; i < count; ++i) {
    acc[i] = FromFloat(ToFloat(acc[i]) + ToFloat(b[i]));
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
inline void AddOverlapping(const uint16_t* a, const uint16_t* b, uint16_t* dst,
                           size_t count) {
  for (size_t i = 0; i < count; ++i) {
    dst[i] = FromFloat(ToFloat(a[i]) + ToFloat(b[i]));
  }
}

bool Overlap(const uint16_t* x, const uint16_t* y, size_t count) {
  return x < y + count && y < x + count;
}

GRADSYNC_VECTOR_CLONES void AddDisjointBf16(const uint16_t* a,
                                            const uint16_t* b, uint16_t* dst,
                                            size_t count) {
  AddDisjoint<BFloat16ToFloat, FloatToBFloat16>(a, b, dst, count);
}

GRADSYNC_VECTOR_CLONES void AddInPlaceBf16(uint16_t* acc, const uint16_t* b,
                                           size_t count) {
  AddInPlace<BFloat16ToFloat, FloatToBFloat16>(acc, b, count);
}

GRADSYNC_VECTOR_CLONES void AddDisjointFp16(const uint16_t* a,
                                            const uint16_t* b, uint16_t* dst,
                                            size_t count) {
  AddDisjoint<Float16ToFloat, FloatToFloat16>(a, b, dst, count);
}

GRADSYNC_VECTOR_CLONES void AddInPlaceFp16(uint16_t* acc, const uint16_t* b,
                                           size_t count) {
  AddInPlace<Float16ToFloat, FloatToFloat16>(acc, b, count);
}

}  // namespace

GRADSYNC_VECTOR_CLONES void FloatsToBFloat16(const float* src, uint16_t* dst,
                                             size_t count) {
  Narrow<FloatToBFloat16>(src, dst, count);
}

GRADSYNC_VECTOR_CLONES void FloatsToFloat16(const float* src, uint16_t* dst,
                                            size_t count) {
  Narrow<FloatToFloat16>(src, dst, count);
}

GRADSYNC_VECTOR_CLONES void BFloat16ToFloats(const uint16_t* src, float* dst,
                                             size_t count) {
  Widen<BFloat16ToFloat>(src, dst, count);
}

GRADSYNC_VECTOR_CLONES void Float16ToFloats(const uint16_t* src, float* dst,
                                            size_t count) {
  Widen<Float16ToFloat>(src, dst, count);
}

void AddBFloat16(const uint16_t* a, const uint16_t* b, uint16_t* dst,
                 size_t count) {
  if (dst == a && !Overlap(dst, b, count)) {
    AddInPlaceBf16(dst, b, count);
  } else if (!Overlap(dst, a, count) && !Overlap(dst, b, count)) {
    AddDisjointBf16(a, b, dst, count);
  } else {
    AddOverlapping<BFloat16ToFloat, FloatToBFloat16>(a, b, dst, count);
  }
}

void AddFloat16(const uint16_t* a, const uint16_t* b, uint16_t* dst,
                size_t count) {
  if (dst == a && !Overlap(dst, b, count)) {
    AddInPlaceFp16(dst, b, count);
  } else if (!Overlap(dst, a, count) && !Overlap(dst, b, count)) {
    AddDisjointFp16(a, b, dst, count);
  } else {
    AddOverlapping<Float16ToFloat, FloatToFloat16>(a, b, dst, count);
  }
}

}  // namespace gradsync
