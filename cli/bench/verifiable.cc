#include "cli/bench/verifiable.h"

#include <cmath>
#include <limits>

namespace gradsync {
namespace bench {
namespace {

template <typename T>
bool Matches(T got, double expected, double tolerance) {
  if (tolerance == 0.0) return got == static_cast<T>(expected);
  const double diff = std::fabs(static_cast<double>(got) - expected);
  // Written so that NaN compares false, hence wrong.
  return diff <= tolerance * std::fabs(expected);
}

template <typename T>
int64_t CountWrongTyped(const VerifySpec& spec, const T* got,
                        size_t recv_count) {
  int64_t wrong = 0;
  for (size_t i = 0; i < recv_count; ++i) {
    if (!Matches<T>(got[i], ExpectedValue(spec, i), spec.tolerance)) ++wrong;
  }
  return wrong;
}

}  // namespace

double ExpectedValue(const VerifySpec& spec, size_t index) {
  switch (spec.collective) {
    case Collective::kAllReduce:
      return ReducedValue(spec.op, spec.type, spec.ranks, index);
    case Collective::kReduceScatter:
      return ReducedValue(
          spec.op, spec.type, spec.ranks,
          static_cast<size_t>(spec.rank) * spec.param_count + index);
    case Collective::kAllGather: {
      if (spec.param_count == 0) return 0.0;
      const size_t block = index / spec.param_count;
      return InputValue(static_cast<int>(block), index % spec.param_count);
    }
    case Collective::kBroadcast:
      return InputValue(spec.root, index);
  }
  return 0.0;
}

int64_t CountWrong(const VerifySpec& spec, const void* got, size_t recv_count) {
  switch (spec.type) {
    case DataType::kFloat32:
      return CountWrongTyped(spec, static_cast<const float*>(got), recv_count);
    case DataType::kFloat64:
      return CountWrongTyped(spec, static_cast<const double*>(got), recv_count);
    case DataType::kInt32:
      return CountWrongTyped(spec, static_cast<const int32_t*>(got),
                             recv_count);
  }
  return static_cast<int64_t>(recv_count);
}

double PreScaledAvgTolerance(DataType type, ReduceOp op, int ranks) {
  if (op != ReduceOp::kAvg) return 0.0;
  double eps = 0.0;
  if (type == DataType::kFloat32) {
    eps = std::numeric_limits<float>::epsilon();
  } else if (type == DataType::kFloat64) {
    eps = std::numeric_limits<double>::epsilon();
  } else {
    return 0.0;
  }
  return 2.0 * (ranks + 1) * eps;
}

}  // namespace bench
}  // namespace gradsync
