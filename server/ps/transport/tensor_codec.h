// The wire form of the parameter server's tensor streams (PushPull,
// SeedShard, FetchState in proto/ps.proto), encoded and decoded without a
// protobuf copy of the tensor bytes.
//
// Every message of those streams has the same four fields: 1 header (a
// message, first message of a stream only), 2 tensor (int32), 3 offset
// (int64, elements), 4 data (bytes). EncodeTensorMessage writes them as a
// small protobuf prefix (the header, tensor, offset and data's tag and
// length) followed by one gRPC slice that points straight at the tensor
// memory, so sending copies nothing. DecodedTensorMessage walks a received
// message's slices as protobuf and copies the data bytes straight into
// their destination (one copy, from gRPC's receive buffers). Both are plain
// protobuf on the wire: peers may use the generated classes instead.
//
//   grpc::ByteBuffer msg = EncodeTensorMessage(nullptr, 0, offset,
//       AsBytes(params.subspan(offset, n)), view);   // view kept alive
//   ...
//   DecodedTensorMessage in;
//   RETURN_IF_ERROR(in.Parse(received));
//   in.CopyData(dest + in.offset() * sizeof(float));
//
// Errors: Parse returns INVALID_ARGUMENT for bytes that are not a valid
// protobuf message of that shape. Threading: the functions are
// thread-safe; a DecodedTensorMessage belongs to one thread.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_CODEC_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_CODEC_H_

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gradsync {

// Chunk sizes of the tensor streams.
inline constexpr size_t kDefaultChunkBytes = size_t{1} << 20;
inline constexpr size_t kMaxChunkBytes = size_t{64} << 20;
// The largest tensor message a PS peer accepts: a full chunk, its header
// and field tags.
inline constexpr size_t kMaxTensorMessageBytes = kMaxChunkBytes + (64 << 10);

// The chunk size for a request of `requested` bytes: 0 means
// kDefaultChunkBytes; others are rounded down to whole floats.
// INVALID_ARGUMENT below 4 bytes (after rounding), above kMaxChunkBytes, or
// negative.
[[nodiscard]] absl::StatusOr<size_t> ResolveChunkBytes(int64_t requested);

// The bytes of a float span (fp32 travels little-endian, the host order of
// every machine gradsync runs on).
inline absl::Span<const char> AsBytes(absl::Span<const float> floats) {
  return absl::Span<const char>(reinterpret_cast<const char*>(floats.data()),
                                floats.size() * sizeof(float));
}

// One message: `header` (may be null), `tensor` and `offset` (omitted when
// 0, as protobuf does), and `data`, which is not copied: the message
// references it until gRPC has sent it, and holds a reference to
// `keep_alive` that long (null: the caller keeps `data` alive until the
// call is over).
grpc::ByteBuffer EncodeTensorMessage(
    const google::protobuf::MessageLite* header, int32_t tensor, int64_t offset,
    absl::Span<const char> data, std::shared_ptr<const void> keep_alive);

// A received message, parsed in place: it references the buffer's slices.
class DecodedTensorMessage {
 public:
  // Parses `buffer`; the previous contents are dropped.
  [[nodiscard]] absl::Status Parse(const grpc::ByteBuffer& buffer);

  bool has_header() const { return has_header_; }
  // Parses the header field into `header` (INVALID_ARGUMENT if it is
  // missing or malformed).
  [[nodiscard]] absl::Status ParseHeader(
      google::protobuf::MessageLite* header) const;
  int32_t tensor() const { return tensor_; }
  int64_t offset() const { return offset_; }
  size_t data_size() const { return data_size_; }
  // Copies the data_size() bytes of the data field to `dest`, bypassing
  // the caches (common/stream_copy.h): destinations are parameters and
  // optimizer state, which are not read again right away.
  void CopyData(char* dest) const;
  // Hands the data field over without a copy: `segments` gets its bytes
  // where they lie in the received buffers, and the returned holder keeps
  // those buffers alive (as long as any copy of it lives). The message is
  // empty afterwards.
  std::shared_ptr<const void> DetachData(
      std::vector<absl::Span<const char>>* segments);

 private:
  std::vector<grpc::Slice> slices_;
  bool has_header_ = false;
  std::string header_;
  int32_t tensor_ = 0;
  int64_t offset_ = 0;
  size_t data_slice_ = 0;  // where the data field's bytes start
  size_t data_pos_ = 0;
  size_t data_size_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_CODEC_H_
