// CopyBypassingCache must copy exactly what memcpy copies, for every
// alignment of source and destination and every length around its
// thresholds (the aligned head, the 64-byte body, the tail), without
// touching a byte outside the destination range.
#include "common/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace gradsync {
namespace {

TEST(StreamCopyTest, MatchesMemcpyForEveryAlignmentAndLength) {
  constexpr size_t kGuard = 64;
  const std::vector<size_t> lengths = {0,
                                       1,
                                       15,
                                       16,
                                       63,
                                       64,
                                       65,
                                       kMinStreamingCopyBytes - 1,
                                       kMinStreamingCopyBytes,
                                       kMinStreamingCopyBytes + 1,
                                       4096 + 17,
                                       16384,
                                       100003};
  std::vector<char> source(100003 + 2 * kGuard);
  for (size_t i = 0; i < source.size(); ++i) {
    source[i] = static_cast<char>((i * 131 + 7) & 0xff);
  }
  for (size_t length : lengths) {
    for (size_t src_shift = 0; src_shift < 16; src_shift += 5) {
      for (size_t dst_shift = 0; dst_shift < 16; ++dst_shift) {
        std::vector<char> got(length + 2 * kGuard, '\x5a');
        std::vector<char> want = got;
        std::memcpy(want.data() + kGuard + dst_shift, source.data() + src_shift,
                    length);
        CopyBypassingCache(got.data() + kGuard + dst_shift,
                           source.data() + src_shift, length);
        ASSERT_EQ(got, want)
            << "length " << length << ", source shift " << src_shift
            << ", destination shift " << dst_shift;
      }
    }
  }
}

}  // namespace
}  // namespace gradsync
