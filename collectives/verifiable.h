// Verifiable inputs for collectives (after nccl-tests'
// verifiable/verifiable.h): every rank fills its input with values whose
// reduction over ranks is known in closed form, so every element of every
// result can be checked exactly, with no reference run and no tolerance.
// One scheme for every place that checks a reduction: `gradsync bench`
// (cli/bench/verifiable.h builds each collective's expected buffers on
// it), the PS transport benchmark, and the collectives' tests.
//
// Rank r's input element i is
//
//   input(r, i) = (r + 1) * P(i),   P(i) = 1 + (top 4 bits of i * 2654435761)
//
// P is a multiplicative hash in [1, 16]: a block that lands at the wrong
// offset is caught (a short period such as i % 7 would hide shifts by
// multiples of it), and the factor (r + 1) tells the ranks' blocks apart.
// Over N ranks:
//
//   sum = P * N(N+1)/2    max = P * N    min = P
//   avg = P * (N+1)/2     (int32: truncated, (P * (N+1)) / 2)
//
// Every partial sum is an integer below 16 * N(N+1)/2, exact in float for
// N <= 1447 (2^24), whatever order the backend adds in; avg is a multiple
// of 1/2, also exact. Only a backend that pre-scales each input by 1/N
// (NCCL's float avg) needs a tolerance.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COLLECTIVES_VERIFIABLE_H_
#define GRADSYNC_COLLECTIVES_VERIFIABLE_H_

#include <cstddef>
#include <cstdint>

#include "collectives/types.h"

namespace gradsync {

// The largest world size for which every float partial sum stays exact.
inline constexpr int kMaxExactRanks = 1447;

// P(i) above, in [1, 16].
inline uint32_t InputPattern(size_t index) {
  return 1u + (static_cast<uint32_t>(index * 2654435761u) >> 28);
}

// input(rank, index) above.
double InputValue(int rank, size_t index);

// Writes input(rank, first_index + i) for i in [0, count) to `buf` (of
// `type`).
void FillInput(DataType type, int rank, void* buf, size_t count,
               size_t first_index = 0);

// Writes -1, a value no result can hold, so that a collective that leaves
// its output untouched is caught.
void FillPoison(DataType type, void* buf, size_t count);

// The reduction with `op` over `ranks` ranks of element `index`, as a
// backend computing in `type` must produce it (int32 avg truncates).
double ReducedValue(ReduceOp op, DataType type, int ranks, size_t index);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_VERIFIABLE_H_
