#include "common/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gradsync {
namespace {

#if defined(__SSE2__)
// One 64-byte line from src (any alignment) to line-aligned dest, bypassing
// the caches.
inline void StreamLine(char* dest, const char* src) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
  _mm_stream_si128(reinterpret_cast<__m128i*>(dest), a);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dest + 16), b);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dest + 32), c);
  _mm_stream_si128(reinterpret_cast<__m128i*>(dest + 48), d);
}
#endif

}  // namespace

void StreamingCopier::Append(const char* src, size_t n) {
  // Nothing to copy: the pointers may be null (an empty span's), which
  // memcpy must not be given even for 0 bytes.
  if (n == 0) return;
#if defined(__SSE2__)
  if (!aligned_) {
    // Up to the first line boundary with ordinary stores: that line is
    // shared with whatever lies before the destination.
    const size_t to_boundary =
        (kLine - (reinterpret_cast<uintptr_t>(out_) & (kLine - 1))) &
        (kLine - 1);
    const size_t head = std::min(n, to_boundary);
    std::memcpy(out_, src, head);
    out_ += head;
    src += head;
    n -= head;
    if (head < to_boundary) return;  // n == 0: still short of the boundary
    aligned_ = true;
  }
  if (staged_ > 0) {
    const size_t k = std::min(n, kLine - staged_);
    std::memcpy(line_ + staged_, src, k);
    staged_ += k;
    out_ += k;
    src += k;
    n -= k;
    if (staged_ < kLine) return;
    StreamLine(out_ - kLine, line_);
    staged_ = 0;
  }
  for (; n >= kLine; n -= kLine, src += kLine, out_ += kLine) {
    StreamLine(out_, src);
  }
  std::memcpy(line_, src, n);
  staged_ = n;
  out_ += n;
#else
  std::memcpy(out_, src, n);
  out_ += n;
#endif
}

void StreamingCopier::Finish() {
#if defined(__SSE2__)
  // The last line is shared with whatever follows the destination.
  if (staged_ > 0) std::memcpy(out_ - staged_, line_, staged_);
  staged_ = 0;
  // Non-temporal stores are weakly ordered: fence them so that a reader
  // synchronised with this thread afterwards sees them.
  _mm_sfence();
#endif
}

void CopyBypassingCache(char* dest, const char* src, size_t n) {
  StreamingCopier copier(dest);
  copier.Append(src, n);
  copier.Finish();
}

}  // namespace gradsync
