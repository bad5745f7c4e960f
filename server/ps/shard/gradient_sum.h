// The parameter server's gradient arithmetic over gradients held as byte
// segments: a rank's gradient for a step may sit in a staging buffer
// (received with recv() or copied), in the receive buffers of the gRPC
// messages that carried it (no copy at all), or in a mix of both, as a
// list of segments that cover its bytes in order. Segment boundaries fall
// anywhere, even inside a float.
//
// AverageInRankOrder sums element i over ranks 0, 1, ..., N-1 in that order
// and divides by N (SumInRankOrder does not divide), so that the result depends
// only on the gradients, not on how they arrived or were split: bitwise the
// same run to run.
//
// 16-bit gradients (a job whose wire type is bf16 or fp16): the segments
// hold 2-byte little-endian elements, widened to fp32 as they are read, so
// the sums are fp32 sums of the exact 16-bit values, in the same rank
// order.
//
// With a ComputePool the sums are cut into element ranges that run on its
// threads at once; each element is still summed in rank order, so the
// result is bitwise the same with or without one.
//
// Pure functions; thread-safe on distinct outputs.
#ifndef GRADSYNC_SERVER_PS_SHARD_GRADIENT_SUM_H_
#define GRADSYNC_SERVER_PS_SHARD_GRADIENT_SUM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "collectives/types.h"
#include "common/compute_pool.h"

namespace gradsync {

// Bytes [data, data + size) of one piece of a gradient.
struct ByteSegment {
  const char* data = nullptr;
  size_t size = 0;
};
using GradientSegments = std::vector<ByteSegment>;

// Appends [data, data + size) to `segments`, merging it into the last
// segment when it continues it.
void AppendSegment(GradientSegments* segments, const char* data, size_t size);

// The total number of bytes the segments cover.
size_t SegmentBytes(const GradientSegments& segments);

// Copies the first `out.size()` bytes the segments cover into `out`.
void GatherSegments(const GradientSegments& segments, absl::Span<char> out);

// out[i] = (g_0[i] + g_1[i] + ... + g_{N-1}[i]) / N over `ranks` (N >= 1,
// each covering out.size() floats), added left to right. `out` may be the
// memory rank 0's segments point into. `pool` may be null.
void AverageInRankOrder(absl::Span<const GradientSegments* const> ranks,
                        absl::Span<float> out, ComputePool* pool = nullptr);

// out[i] = g_0[i] + g_1[i] + ... + g_{N-1}[i], added left to right (as
// AverageInRankOrder, without the division).
void SumInRankOrder(absl::Span<const GradientSegments* const> ranks,
                    absl::Span<float> out, ComputePool* pool = nullptr);

// What ReduceInBlocks hands each block to: the block's first element and
// its sums. Called from several threads at once for disjoint blocks.
using ReducedBlockFn =
    absl::FunctionRef<void(size_t begin, absl::Span<const float> block)>;

// The sums (average: the averages) of AverageInRankOrder/SumInRankOrder,
// not written out but handed to `consume` a few KiB at a time while they
// are in L1: blocks that tile [0, n) exactly once, in ascending order
// within each of the pool's parts. For a consumer that uses the sums at
// once (a shard's optimizer update), this saves writing n floats out and
// reading them back.
// `element`: the segments' element type, kFloat32 (4 bytes each) or
// kBFloat16 / kFloat16 (2 bytes each, widened to fp32; the sums are fp32).
void ReduceInBlocks(absl::Span<const GradientSegments* const> ranks,
                    bool average, size_t n, ComputePool* pool,
                    const ReducedBlockFn& consume,
                    DataType element = DataType::kFloat32);

// True for the 16-bit wire types (kBFloat16, kFloat16).
bool IsWire16(DataType element);
// Bytes of one gradient element on the wire: 2 for a 16-bit type, else 4.
size_t WireElementBytes(DataType element);

// Widens `n` 16-bit elements at the start of `data` into `n` floats in
// the same buffer (which holds n * 4 bytes); nothing for kFloat32.
void WidenInPlace(DataType element, char* data, size_t n);

// out[i] = in[i] rounded to `element` (bf16 or fp16: round to nearest
// even, fp16 clamping finite values to +-65504; collectives/half.h).
void RoundForWire(DataType element, absl::Span<const float> in, uint16_t* out);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_GRADIENT_SUM_H_
