#include "cli/bench/verifiable.h"

#include <cmath>
#include <limits>

namespace gradsync {
namespace bench {
namespace {

// The reduction over `ranks` ranks of (r + 1) * p, r = 0..ranks-1.
double ReducedValue(ReduceOp op, DataType type, int ranks, uint32_t p) {
  const double n = ranks;
  switch (op) {
    case ReduceOp::kSum:
      return p * n * (n + 1) / 2;
    case ReduceOp::kAvg:
      if (type == DataType::kInt32) {
        // The backend divides the exact integer sum, truncating.
        return static_cast<double>((static_cast<int64_t>(p) * (ranks + 1)) / 2);
      }
      return p * (n + 1) / 2;
    case ReduceOp::kMax:
      return p * n;
    case ReduceOp::kMin:
      return p;
  }
  return 0.0;
}

template <typename T>
void FillTyped(int rank, T* buf, size_t count) {
  const T factor = static_cast<T>(rank + 1);
  for (size_t i = 0; i < count; ++i) {
    buf[i] = factor * static_cast<T>(InputPattern(i));
  }
}

template <typename T>
void FillConstant(T* buf, size_t count, T value) {
  for (size_t i = 0; i < count; ++i) buf[i] = value;
}

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

double InputValue(int rank, size_t index) {
  return static_cast<double>(rank + 1) * InputPattern(index);
}

void FillInput(DataType type, int rank, void* buf, size_t count) {
  switch (type) {
    case DataType::kFloat32:
      FillTyped(rank, static_cast<float*>(buf), count);
      return;
    case DataType::kFloat64:
      FillTyped(rank, static_cast<double*>(buf), count);
      return;
    case DataType::kInt32:
      FillTyped(rank, static_cast<int32_t*>(buf), count);
      return;
  }
}

void FillPoison(DataType type, void* buf, size_t count) {
  switch (type) {
    case DataType::kFloat32:
      FillConstant(static_cast<float*>(buf), count, -1.0f);
      return;
    case DataType::kFloat64:
      FillConstant(static_cast<double*>(buf), count, -1.0);
      return;
    case DataType::kInt32:
      FillConstant(static_cast<int32_t*>(buf), count, int32_t{-1});
      return;
  }
}

double ExpectedValue(const VerifySpec& spec, size_t index) {
  switch (spec.collective) {
    case Collective::kAllReduce:
      return ReducedValue(spec.op, spec.type, spec.ranks, InputPattern(index));
    case Collective::kReduceScatter:
      return ReducedValue(
          spec.op, spec.type, spec.ranks,
          InputPattern(static_cast<size_t>(spec.rank) * spec.param_count +
                       index));
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
