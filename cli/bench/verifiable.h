// Verifiable inputs for `gradsync bench` (after nccl-tests'
// verifiable/verifiable.h): every rank fills its input with values whose
// reduction over ranks is known in closed form, so every element of every
// result can be checked exactly, with no reference run and no tolerance.
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
// (NCCL's float avg) needs a tolerance; see VerifySpec::tolerance.
//
// Thread-compatible pure functions.
#ifndef GRADSYNC_CLI_BENCH_VERIFIABLE_H_
#define GRADSYNC_CLI_BENCH_VERIFIABLE_H_

#include <cstddef>
#include <cstdint>

#include "cli/bench/collective.h"
#include "collectives/types.h"

namespace gradsync {
namespace bench {

// The largest world size for which every float partial sum stays exact.
inline constexpr int kMaxExactRanks = 1447;

// P(i) above, in [1, 16].
inline uint32_t InputPattern(size_t index) {
  return 1u + (static_cast<uint32_t>(index * 2654435761u) >> 28);
}

// input(rank, index) above.
double InputValue(int rank, size_t index);

// Writes input(rank, i) for i in [0, count) to `buf` (of `type`).
void FillInput(DataType type, int rank, void* buf, size_t count);

// Writes -1, a value no result can hold, so that a collective that leaves
// its output untouched is caught.
void FillPoison(DataType type, void* buf, size_t count);

// What a rank's result buffer must hold after one call.
struct VerifySpec {
  Collective collective = Collective::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int rank = 0;
  int ranks = 1;
  int root = 0;
  // The call's CollectiveCounts::param_count.
  size_t param_count = 0;
  // Accepted relative error |got - expected| <= tolerance * |expected|;
  // 0 demands equality (the default, and what integer inputs allow).
  double tolerance = 0.0;
};

// Expected value of element `index` of the result buffer (which holds
// recv_count elements: param_count, or ranks * param_count for allgather).
double ExpectedValue(const VerifySpec& spec, size_t index);

// The number of elements of `got` (recv_count elements of spec.type) that
// differ from ExpectedValue; NaN always counts as wrong.
int64_t CountWrong(const VerifySpec& spec, const void* got, size_t recv_count);

// Relative tolerance for a backend that computes avg by pre-multiplying
// each input by 1/N in the element type (N roundings of eps/2 each, plus
// the sum's). 0 for integer types and for the other operators.
double PreScaledAvgTolerance(DataType type, ReduceOp op, int ranks);

}  // namespace bench
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_VERIFIABLE_H_
