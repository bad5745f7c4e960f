#include "collectives/verifiable.h"

#include "collectives/half.h"

namespace gradsync {
namespace {

template <typename T>
void FillTyped(int rank, T* buf, size_t count, size_t first_index) {
  const T factor = static_cast<T>(rank + 1);
  for (size_t i = 0; i < count; ++i) {
    buf[i] = factor * static_cast<T>(InputPattern(first_index + i));
  }
}

template <typename T>
void FillConstant(T* buf, size_t count, T value) {
  for (size_t i = 0; i < count; ++i) buf[i] = value;
}

// 16-bit inputs: the same values, rounded (exact while (rank + 1) * 16
// fits the type's significand: up to 128 ranks in fp16, 16 in bfloat16).
template <uint16_t (*FromFloat)(float)>
void Fill16(int rank, uint16_t* buf, size_t count, size_t first_index) {
  const float factor = static_cast<float>(rank + 1);
  for (size_t i = 0; i < count; ++i) {
    buf[i] =
        FromFloat(factor * static_cast<float>(InputPattern(first_index + i)));
  }
}

}  // namespace

double InputValue(int rank, size_t index) {
  return static_cast<double>(rank + 1) * InputPattern(index);
}

void FillInput(DataType type, int rank, void* buf, size_t count,
               size_t first_index) {
  switch (type) {
    case DataType::kFloat32:
      FillTyped(rank, static_cast<float*>(buf), count, first_index);
      return;
    case DataType::kFloat64:
      FillTyped(rank, static_cast<double*>(buf), count, first_index);
      return;
    case DataType::kInt32:
      FillTyped(rank, static_cast<int32_t*>(buf), count, first_index);
      return;
    case DataType::kBFloat16:
      Fill16<FloatToBFloat16>(rank, static_cast<uint16_t*>(buf), count,
                              first_index);
      return;
    case DataType::kFloat16:
      Fill16<FloatToFloat16>(rank, static_cast<uint16_t*>(buf), count,
                             first_index);
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
    case DataType::kBFloat16:
      FillConstant(static_cast<uint16_t*>(buf), count, FloatToBFloat16(-1));
      return;
    case DataType::kFloat16:
      FillConstant(static_cast<uint16_t*>(buf), count, FloatToFloat16(-1));
      return;
  }
}

double ReducedValue(ReduceOp op, DataType type, int ranks, size_t index) {
  const uint32_t p = InputPattern(index);
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

}  // namespace gradsync
