#include "cli/bench/verifiable.h"

#include <cmath>
#include <limits>

#include "collectives/half.h"

namespace gradsync {
namespace cli {
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

template <float (*ToFloat)(uint16_t)>
int64_t CountWrong16(const VerifySpec& spec, const uint16_t* got,
                     size_t recv_count) {
  int64_t wrong = 0;
  for (size_t i = 0; i < recv_count; ++i) {
    if (!Matches<float>(ToFloat(got[i]), ExpectedValue(spec, i),
                        spec.tolerance)) {
      ++wrong;
    }
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
    case DataType::kBFloat16:
      return CountWrong16<BFloat16ToFloat>(
          spec, static_cast<const uint16_t*>(got), recv_count);
    case DataType::kFloat16:
      return CountWrong16<Float16ToFloat>(
          spec, static_cast<const uint16_t*>(got), recv_count);
  }
  return static_cast<int64_t>(recv_count);
}

double PreScaledAvgTolerance(DataType type, ReduceOp op, int ranks) {
  // 16-bit: every hop of a sum rounds once, to half an ulp (2^-8 of the
  // value for bfloat16, 2^-11 for fp16).
  if (type == DataType::kBFloat16) return ranks * std::ldexp(1.0, -8);
  if (type == DataType::kFloat16) return ranks * std::ldexp(1.0, -11);
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
}  // namespace cli
}  // namespace gradsync
