#include "server/ps/shard/gradient_sum.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace gradsync {
namespace {

// Floats summed per pass over the ranks: the running sums stay in L1 while
// every rank's block streams through.
constexpr size_t kBlock = 2048;

// The least work worth handing to another thread: 1 MiB per rank.
constexpr size_t kMinPartFloats = 256 * 1024;

// out[j] += the j-th float at `in` (any alignment), j < k.
void AddRun(float* __restrict out, const char* __restrict in, size_t k) {
  for (size_t j = 0; j < k; ++j) {
    float v;
    std::memcpy(&v, in + j * sizeof(float), sizeof(float));
    out[j] += v;
  }
}

// Walks one rank's segments block by block.
class SegmentReader {
 public:
  explicit SegmentReader(const GradientSegments& segments)
      : segments_(segments) {}

  // sum[i] = next float (kAssign) or sum[i] += next float (kAdd), for the
  // next `n` floats, read where they lie: runs inside one segment go
  // straight from it (unaligned loads), and only a float split between two
  // segments is assembled on the side.
  template <bool kAssign>
  void Apply(float* sum, size_t n) {
    size_t i = 0;
    while (i < n) {
      const ByteSegment& s = segments_[index_];
      const size_t whole = (s.size - offset_) / sizeof(float);
      if (whole > 0) {
        const size_t k = std::min(n - i, whole);
        if (kAssign) {
          std::memcpy(sum + i, s.data + offset_, k * sizeof(float));
        } else {
          AddRun(sum + i, s.data + offset_, k);
        }
        i += k;
        Advance(k * sizeof(float));
      } else {
        float v;
        Copy(reinterpret_cast<char*>(&v), sizeof(float));
        if (kAssign) {
          sum[i] = v;
        } else {
          sum[i] += v;
        }
        ++i;
      }
    }
  }

  // Skips the first `bytes` bytes.
  void Seek(size_t bytes) {
    while (bytes > 0 && index_ < segments_.size()) {
      const size_t n = std::min(bytes, segments_[index_].size - offset_);
      bytes -= n;
      Advance(n);
    }
  }

  void Copy(char* out, size_t bytes) {
    while (bytes > 0 && index_ < segments_.size()) {
      const ByteSegment& s = segments_[index_];
      const size_t n = std::min(bytes, s.size - offset_);
      std::memcpy(out, s.data + offset_, n);
      out += n;
      bytes -= n;
      Advance(n);
    }
  }

 private:
  void Advance(size_t n) {
    offset_ += n;
    while (index_ < segments_.size() && offset_ == segments_[index_].size) {
      ++index_;
      offset_ = 0;
    }
  }

  const GradientSegments& segments_;
  size_t index_ = 0;
  size_t offset_ = 0;
};

}  // namespace

void AppendSegment(GradientSegments* segments, const char* data, size_t size) {
  if (size == 0) return;
  if (!segments->empty()) {
    ByteSegment& last = segments->back();
    if (last.data + last.size == data) {
      last.size += size;
      return;
    }
  }
  segments->push_back(ByteSegment{data, size});
}

size_t SegmentBytes(const GradientSegments& segments) {
  size_t bytes = 0;
  for (const ByteSegment& s : segments) bytes += s.size;
  return bytes;
}

void GatherSegments(const GradientSegments& segments, absl::Span<char> out) {
  SegmentReader(segments).Copy(out.data(), out.size());
}

namespace {

// Hands consume() the rank-order sums (averages) of elements [first,
// first + n) block by block.
void ReduceRange(absl::Span<const GradientSegments* const> ranks, bool average,
                 size_t first, size_t n, const ReducedBlockFn& consume) {
  std::vector<SegmentReader> readers;
  readers.reserve(ranks.size());
  for (const GradientSegments* r : ranks) {
    readers.emplace_back(*r);
    readers.back().Seek(first * sizeof(float));
  }
  const float divisor = static_cast<float>(ranks.size());
  alignas(64) float sum[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t k = std::min(kBlock, n - b);
    readers[0].Apply</*kAssign=*/true>(sum, k);
    for (size_t r = 1; r < readers.size(); ++r) {
      readers[r].Apply</*kAssign=*/false>(sum, k);
    }
    if (average && readers.size() > 1) {
      for (size_t i = 0; i < k; ++i) sum[i] /= divisor;
    }
    consume(first + b, absl::MakeConstSpan(sum, k));
  }
}

void ReduceInRankOrder(absl::Span<const GradientSegments* const> ranks,
                       bool average, absl::Span<float> out, ComputePool* pool) {
  ReduceInBlocks(ranks, average, out.size(), pool,
                 [out](size_t begin, absl::Span<const float> block) {
                   std::memcpy(out.data() + begin, block.data(),
                               block.size() * sizeof(float));
                 });
}

}  // namespace

void ReduceInBlocks(absl::Span<const GradientSegments* const> ranks,
                    bool average, size_t n, ComputePool* pool,
                    const ReducedBlockFn& consume) {
  ParallelFor(pool, n, kMinPartFloats, [&](size_t begin, size_t end) {
    ReduceRange(ranks, average, begin, end - begin, consume);
  });
}

void AverageInRankOrder(absl::Span<const GradientSegments* const> ranks,
                        absl::Span<float> out, ComputePool* pool) {
  ReduceInRankOrder(ranks, /*average=*/true, out, pool);
}

void SumInRankOrder(absl::Span<const GradientSegments* const> ranks,
                    absl::Span<float> out, ComputePool* pool) {
  ReduceInRankOrder(ranks, /*average=*/false, out, pool);
}

}  // namespace gradsync
