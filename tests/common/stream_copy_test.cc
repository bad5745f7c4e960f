// StreamingCopier must copy exactly what memcpy copies, for every
// alignment of source and destination within a cache line, every length
// around its thresholds (the partial first line, whole lines, the held-back
// last line) and any cut of the run into pieces, without touching a byte
// outside the destination range.
#include "common/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace gradsync {
namespace {

constexpr size_t kGuard = 128;

std::vector<char> Pattern(size_t n) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + 7) & 0xff);
  return v;
}

// A destination buffer whose first byte sits `shift` bytes past a 64-byte
// boundary, with guard bytes on both sides.
struct Destination {
  Destination(size_t length, size_t shift)
      : bytes(length + 2 * kGuard + 128, '\x5a'), length(length) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(bytes.data()) + kGuard;
    const uintptr_t aligned = (base + 63) & ~uintptr_t{63};
    start = bytes.data() +
            (aligned - reinterpret_cast<uintptr_t>(bytes.data())) + shift;
  }
  // The destination range with kGuard bytes either side.
  std::string Window() const {
    return std::string(start - kGuard, start + length + kGuard);
  }
  std::vector<char> bytes;
  size_t length;
  char* start;
};

TEST(StreamCopyTest, MatchesMemcpyForEveryAlignmentAndLength) {
  const std::vector<size_t> lengths = {
      0, 1, 15, 16, 63, 64, 65, 127, 128, 129, 4096 + 17, 16384, 100003};
  const std::vector<char> source = Pattern(100003 + 64);
  for (size_t length : lengths) {
    for (size_t src_shift = 0; src_shift < 16; src_shift += 5) {
      for (size_t dst_shift = 0; dst_shift < 64; ++dst_shift) {
        Destination got(length, dst_shift);
        Destination want(length, dst_shift);
        std::memcpy(want.start, source.data() + src_shift, length);
        CopyBypassingCache(got.start, source.data() + src_shift, length);
        ASSERT_EQ(got.Window(), want.Window())
            << "length " << length << ", source shift " << src_shift
            << ", destination shift " << dst_shift;
      }
    }
  }
}

// Pieces of every size, empty ones included, as gRPC's receive buffers cut
// a message: the run comes out as one memcpy of the whole would leave it.
TEST(StreamCopyTest, PiecesCopyAsOneRun) {
  std::mt19937 rng(7);
  const std::vector<char> source = Pattern(300000);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t length = rng() % 200000;
    const size_t max_piece = size_t{1} << (rng() % 15);  // 1 B .. 16 KiB
    const size_t dst_shift = rng() % 64;
    const size_t src_shift = rng() % 64;
    Destination got(length, dst_shift);
    Destination want(length, dst_shift);
    std::memcpy(want.start, source.data() + src_shift, length);
    StreamingCopier copier(got.start);
    for (size_t done = 0; done < length;) {
      const size_t piece = std::min(length - done, rng() % (max_piece + 1));
      copier.Append(source.data() + src_shift + done, piece);
      done += piece;
    }
    copier.Finish();
    ASSERT_EQ(got.Window(), want.Window())
        << "trial " << trial << ": length " << length << ", pieces up to "
        << max_piece << ", destination shift " << dst_shift;
  }
}

}  // namespace
}  // namespace gradsync
