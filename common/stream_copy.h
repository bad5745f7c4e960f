// Copying received tensor bytes into memory that nobody reads soon.
//
// A parameter-server client copies every pulled chunk from gRPC's receive
// buffers (small, hot in cache) into the model's parameters (large, cold).
// A plain memcpy first reads each destination cache line from memory (a
// read-for-ownership) only to overwrite it, and then evicts hot data to
// make room for it. Non-temporal stores skip both: on the 2-core bench
// host they copy a 64 MiB destination from a 16 KiB source at about 1.9x
// memcpy's rate.
//
// A chunk arrives as many receive buffers of a few KiB each, which rarely
// end on a cache-line boundary. Streaming each one separately would leave
// a partly written line at every seam, finished with ordinary stores: a
// read-for-ownership of a line that non-temporal stores are still
// writing, which stalls for a round trip to memory at every seam.
// StreamingCopier therefore streams the pieces as one run: only whole,
// aligned 64-byte lines go out with non-temporal stores, and a line split
// between two pieces is assembled on the side first. Ordinary stores touch
// only the partial lines at the two ends of the whole run.
//
//   StreamingCopier copier(params + offset);
//   for (const Slice& s : slices) copier.Append(s.data(), s.size());
//   copier.Finish();
//
// Use it only where the destination is large and not read right away (the
// next step's forward pass reads parameters long after a pull of tens of
// MiB has flushed them from the caches anyway). Without SSE2 it is memcpy.
//
// Not thread-safe (one copier per run); Finish fences the stores, so the
// bytes are visible to other threads as after a memcpy.
#ifndef GRADSYNC_COMMON_STREAM_COPY_H_
#define GRADSYNC_COMMON_STREAM_COPY_H_

#include <cstddef>

namespace gradsync {

class StreamingCopier {
 public:
  // Bytes go to dest, dest + 1, ... in the order they are appended.
  explicit StreamingCopier(char* dest) : out_(dest) {}
  StreamingCopier(const StreamingCopier&) = delete;
  StreamingCopier& operator=(const StreamingCopier&) = delete;

  // Copies [src, src + n) to the next n bytes of the destination (the
  // ranges must not overlap).
  void Append(const char* src, size_t n);
  // Writes the bytes still held back and fences. Call once, last.
  void Finish();

 private:
  static constexpr size_t kLine = 64;

  char* out_;             // where the next appended byte belongs
  bool aligned_ = false;  // out_ has reached a line boundary once
  // The first staged_ bytes of the line that starts at out_ - staged_.
  alignas(kLine) char line_[kLine];
  size_t staged_ = 0;
};

// Copies [src, src + n) to dest as one run (see StreamingCopier).
void CopyBypassingCache(char* dest, const char* src, size_t n);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_STREAM_COPY_H_
