// What each collective's result buffer must hold in `gradsync bench`,
// built on the verifiable inputs of collectives/verifiable.h (rank r's
// element i is (r + 1) * P(i), P in [1, 16]): all-reduce and
// reduce-scatter hold the closed-form reduction of their elements,
// all-gather every rank's input block, broadcast the root's input. Every
// element is checked exactly; only a backend that pre-scales each input by
// 1/N (NCCL's float avg) needs a tolerance (VerifySpec::tolerance).
//
// Thread-compatible pure functions.
#ifndef GRADSYNC_CLI_BENCH_VERIFIABLE_H_
#define GRADSYNC_CLI_BENCH_VERIFIABLE_H_

#include <cstddef>
#include <cstdint>

#include "cli/bench/collective.h"
#include "collectives/types.h"
#include "collectives/verifiable.h"

namespace gradsync {
namespace cli {
namespace bench {

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
// the sum's). 0 for integer types and for the other operators. 16-bit
// types get N half-ulps for every operator: each hop of the ring rounds.
double PreScaledAvgTolerance(DataType type, ReduceOp op, int ranks);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_VERIFIABLE_H_
