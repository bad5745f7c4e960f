#include "common/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gradsync {

void CopyBypassingCache(char* dest, const char* src, size_t n) {
#if defined(__SSE2__)
  if (n < kMinStreamingCopyBytes) {
    std::memcpy(dest, src, n);
    return;
  }
  // Non-temporal stores need 16-byte aligned destinations.
  const size_t head =
      (16 - (reinterpret_cast<uintptr_t>(dest) & 15)) & size_t{15};
  std::memcpy(dest, src, head);
  dest += head;
  src += head;
  n -= head;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dest + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dest + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dest + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dest + i + 48), d);
  }
  std::memcpy(dest + i, src + i, n - i);
  // Non-temporal stores are weakly ordered: fence them so that a reader
  // synchronised with this thread afterwards sees them.
  _mm_sfence();
#else
  std::memcpy(dest, src, n);
#endif
}

}  // namespace gradsync
