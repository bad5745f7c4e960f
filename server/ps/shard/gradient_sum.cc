#include "server/ps/shard/gradient_sum.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "collectives/half.h"

namespace gradsync {
namespace {

// Floats summed per pass over the ranks: the running sums stay in L1 while
// every rank's block streams through.
constexpr size_t kBlock = 2048;

// The least work worth handing to another thread: 1 MiB per rank.
constexpr size_t kMinPartFloats = 256 * 1024;

// The j-th element at `in` (any alignment), widened to fp32.
template <DataType kType>
inline float LoadElement(const char* in, size_t j) {
  if constexpr (kType == DataType::kFloat32) {
    float v;
    std::memcpy(&v, in + j * sizeof(float), sizeof(float));
    return v;
  } else {
    uint16_t h;
    std::memcpy(&h, in + j * sizeof(uint16_t), sizeof(uint16_t));
    return kType == DataType::kBFloat16 ? BFloat16ToFloat(h)
                                        : Float16ToFloat(h);
  }
}

// out[j] = (kAssign) or += the j-th element at `in`, j < k.
template <DataType kType, bool kAssign>
void ApplyRun(float* __restrict out, const char* __restrict in, size_t k) {
  if constexpr (kType == DataType::kFloat32 && kAssign) {
    std::memcpy(out, in, k * sizeof(float));
  } else {
    for (size_t j = 0; j < k; ++j) {
      if (kAssign) {
        out[j] = LoadElement<kType>(in, j);
      } else {
        out[j] += LoadElement<kType>(in, j);
      }
    }
  }
}

// Walks one rank's segments block by block; elements of kType (fp32, or
// a 16-bit wire type widened to fp32 as it is read).
template <DataType kType>
class SegmentReader {
 public:
  static constexpr size_t kElementBytes =
      kType == DataType::kFloat32 ? sizeof(float) : sizeof(uint16_t);

  explicit SegmentReader(const GradientSegments& segments)
      : segments_(segments) {}

  // sum[i] = next element (kAssign) or sum[i] += next element (kAdd), for
  // the next `n` elements, read where they lie: runs inside one segment go
  // straight from it (unaligned loads), and only an element split between
  // two segments is assembled on the side.
  template <bool kAssign>
  void Apply(float* sum, size_t n) {
    size_t i = 0;
    while (i < n) {
      const ByteSegment& s = segments_[index_];
      const size_t whole = (s.size - offset_) / kElementBytes;
      if (whole > 0) {
        const size_t k = std::min(n - i, whole);
        ApplyRun<kType, kAssign>(sum + i, s.data + offset_, k);
        i += k;
        Advance(k * kElementBytes);
      } else {
        char bytes[sizeof(float)];
        Copy(bytes, kElementBytes);
        const float v = LoadElement<kType>(bytes, 0);
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
  SegmentReader<DataType::kFloat32>(segments).Copy(out.data(), out.size());
}

namespace {

// Hands consume() the rank-order sums (averages) of elements [first,
// first + n) block by block.
template <DataType kType>
void ReduceRange(absl::Span<const GradientSegments* const> ranks, bool average,
                 size_t first, size_t n, const ReducedBlockFn& consume) {
  std::vector<SegmentReader<kType>> readers;
  readers.reserve(ranks.size());
  for (const GradientSegments* r : ranks) {
    readers.emplace_back(*r);
    readers.back().Seek(first * SegmentReader<kType>::kElementBytes);
  }
  const float divisor = static_cast<float>(ranks.size());
  alignas(64) float sum[kBlock];
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t k = std::min(kBlock, n - b);
    readers[0].template Apply</*kAssign=*/true>(sum, k);
    for (size_t r = 1; r < readers.size(); ++r) {
      readers[r].template Apply</*kAssign=*/false>(sum, k);
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
                    const ReducedBlockFn& consume, DataType element) {
  ParallelFor(pool, n, kMinPartFloats, [&](size_t begin, size_t end) {
    switch (element) {
      case DataType::kBFloat16:
        ReduceRange<DataType::kBFloat16>(ranks, average, begin, end - begin,
                                         consume);
        break;
      case DataType::kFloat16:
        ReduceRange<DataType::kFloat16>(ranks, average, begin, end - begin,
                                        consume);
        break;
      default:
        ReduceRange<DataType::kFloat32>(ranks, average, begin, end - begin,
                                        consume);
        break;
    }
  });
}

size_t WireElementBytes(DataType element) {
  return IsWire16(element) ? sizeof(uint16_t) : sizeof(float);
}

bool IsWire16(DataType element) {
  return element == DataType::kBFloat16 || element == DataType::kFloat16;
}

void WidenInPlace(DataType element, char* data, size_t n) {
  if (!IsWire16(element)) return;
  // Last element first: float i (bytes [4i, 4i + 4)) only overwrites the
  // 16-bit elements 2i and 2i + 1, which are already read.
  for (size_t i = n; i-- > 0;) {
    uint16_t h;
    std::memcpy(&h, data + i * sizeof(uint16_t), sizeof(h));
    const float v =
        element == DataType::kBFloat16 ? BFloat16ToFloat(h) : Float16ToFloat(h);
    std::memcpy(data + i * sizeof(float), &v, sizeof(v));
  }
}

void RoundForWire(DataType element, absl::Span<const float> in, uint16_t* out) {
  if (element == DataType::kBFloat16) {
    FloatsToBFloat16(in.data(), out, in.size());
  } else if (element == DataType::kFloat16) {
    FloatsToFloat16(in.data(), out, in.size());
  }
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
