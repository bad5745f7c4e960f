// Element types and reduction operators understood by every Communicator,
// plus the reduction kernels the CPU backends share.
#ifndef GRADSYNC_COLLECTIVES_TYPES_H_
#define GRADSYNC_COLLECTIVES_TYPES_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// kBFloat16 and kFloat16 are 16-bit gradients on the wire (collectives/
// half.h): each reduction converts to fp32, reduces there, and rounds to
// nearest even once; fp16 clamps finite values beyond +-65504 to it.
enum class DataType : uint8_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kInt32 = 2,
  kBFloat16 = 3,
  kFloat16 = 4,
};
enum class ReduceOp : uint8_t { kSum = 0, kAvg = 1, kMax = 2, kMin = 3 };

// Size of one element of `type` in bytes.
size_t DataTypeSize(DataType type);
// "float", "double", "int32", "bfloat16", "half": the names nccl-tests
// prints.
absl::string_view DataTypeName(DataType type);
absl::string_view ReduceOpName(ReduceOp op);
// Parses the names above (and aliases such as "fp32", "f32", "int").
[[nodiscard]] absl::StatusOr<DataType> ParseDataType(absl::string_view name);
[[nodiscard]] absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name);
bool IsValid(DataType type);
bool IsValid(ReduceOp op);

// dst[i] = a[i] (op) b[i] for i < count. kAvg reduces as kSum: averaging is
// a final division (see DivideInPlace). `dst` may alias `a` or `b`.
void Reduce(DataType type, ReduceOp op, void* dst, const void* a, const void* b,
            size_t count);

// buf[i] /= divisor, for the final step of kAvg. Integers divide truncating.
void DivideInPlace(DataType type, void* buf, size_t count, int divisor);

// The half-open element range [begin, end) of block `index` when `count`
// elements are split into `blocks` balanced contiguous blocks (the first
// count % blocks blocks get one extra element).
struct BlockRange {
  size_t begin;
  size_t end;
  size_t size() const { return end - begin; }
};
BlockRange BalancedBlock(size_t count, size_t blocks, size_t index);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TYPES_H_
