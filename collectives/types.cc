#include "collectives/types.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "collectives/half.h"

namespace gradsync {
namespace {

template <typename T>
void ReduceTyped(ReduceOp op, T* dst, const T* a, const T* b, size_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
      return;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i) dst[i] = std::max(a[i], b[i]);
      return;
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i) dst[i] = std::min(a[i], b[i]);
      return;
  }
}

template <typename T>
void DivideTyped(T* buf, size_t n, int divisor) {
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) buf[i] = buf[i] / d;
}

// A 16-bit type reduces in fp32, each result rounded once. The sum, the
// ring's hot loop, is half.h's fused vectorized kernel `Add`.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float),
          void (*Add)(const uint16_t*, const uint16_t*, uint16_t*, size_t)>
void Reduce16(ReduceOp op, uint16_t* dst, const uint16_t* a, const uint16_t* b,
              size_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      Add(a, b, dst, n);
      return;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i) {
        dst[i] = FromFloat(std::max(ToFloat(a[i]), ToFloat(b[i])));
      }
      return;
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i) {
        dst[i] = FromFloat(std::min(ToFloat(a[i]), ToFloat(b[i])));
      }
      return;
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Divide16(uint16_t* buf, size_t n, int divisor) {
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) buf[i] = FromFloat(ToFloat(buf[i]) / d);
}

}  // namespace

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kInt32:
      return 4;
    case DataType::kBFloat16:
    case DataType::kFloat16:
      return 2;
  }
  return 0;
}

absl::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat64:
      return "double";
    case DataType::kInt32:
      return "int32";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat16:
      return "half";
  }
  return "invalid";
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "invalid";
}

bool IsValid(DataType type) {
  return static_cast<uint8_t>(type) <= static_cast<uint8_t>(DataType::kFloat16);
}

bool IsValid(ReduceOp op) {
  return static_cast<uint8_t>(op) <= static_cast<uint8_t>(ReduceOp::kMin);
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "float" || n == "fp32" || n == "f32" || n == "float32") {
    return DataType::kFloat32;
  }
  if (n == "double" || n == "fp64" || n == "f64" || n == "float64") {
    return DataType::kFloat64;
  }
  if (n == "int32" || n == "int" || n == "i32") return DataType::kInt32;
  if (n == "bfloat16" || n == "bf16") return DataType::kBFloat16;
  if (n == "half" || n == "fp16" || n == "f16" || n == "float16") {
    return DataType::kFloat16;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown data type '", name,
                   "'; use float, double, int32, bfloat16 or half"));
}

absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "sum") return ReduceOp::kSum;
  if (n == "avg" || n == "mean") return ReduceOp::kAvg;
  if (n == "max") return ReduceOp::kMax;
  if (n == "min") return ReduceOp::kMin;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown reduction '", name, "'; use sum, avg, max or min"));
}

void Reduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
            size_t count) {
  switch (type) {
    case DataType::kFloat32:
      ReduceTyped<float>(op, static_cast<float*>(dst),
                         static_cast<const float*>(a),
                         static_cast<const float*>(b), count);
      return;
    case DataType::kFloat64:
      ReduceTyped<double>(op, static_cast<double*>(dst),
                          static_cast<const double*>(a),
                          static_cast<const double*>(b), count);
      return;
    case DataType::kInt32:
      ReduceTyped<int32_t>(op, static_cast<int32_t*>(dst),
                           static_cast<const int32_t*>(a),
                           static_cast<const int32_t*>(b), count);
      return;
    case DataType::kBFloat16:
      Reduce16<BFloat16ToFloat, FloatToBFloat16, AddBFloat16>(
          op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
          static_cast<const uint16_t*>(b), count);
      return;
    case DataType::kFloat16:
      Reduce16<Float16ToFloat, FloatToFloat16, AddFloat16>(
          op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
          static_cast<const uint16_t*>(b), count);
      return;
  }
}

void DivideInPlace(DataType type, void* buf, size_t count, int divisor) {
  switch (type) {
    case DataType::kFloat32:
      DivideTyped(static_cast<float*>(buf), count, divisor);
      return;
    case DataType::kFloat64:
      DivideTyped(static_cast<double*>(buf), count, divisor);
      return;
    case DataType::kInt32:
      DivideTyped(static_cast<int32_t*>(buf), count, divisor);
      return;
    case DataType::kBFloat16:
      Divide16<BFloat16ToFloat, FloatToBFloat16>(static_cast<uint16_t*>(buf),
                                                 count, divisor);
      return;
    case DataType::kFloat16:
      Divide16<Float16ToFloat, FloatToFloat16>(static_cast<uint16_t*>(buf),
                                               count, divisor);
      return;
  }
}

BlockRange BalancedBlock(size_t count, size_t blocks, size_t index) {
  const size_t base = count / blocks;
  const size_t extra = count % blocks;
  const size_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

}  // namespace gradsync
