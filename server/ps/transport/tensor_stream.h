// Sending and receiving whole tensors over one of the parameter server's
// tensor streams (see tensor_codec.h for the message layout): WriteTensors
// cuts tensors into chunks and writes them in order without copying the
// bytes; TensorReceiver checks that received chunks come in order and
// cover each tensor exactly, and copies them into the caller's memory.
//
//   // sender (a grpc::ServerWriter, ClientWriter or ReaderWriter)
//   if (!WriteTensors(writer, &header, {params}, chunk_bytes, view)) ...
//   // receiver
//   TensorReceiver receiver({AsWritableBytes(params)});
//   while (reader->Read(&buffer)) {
//     RETURN_IF_ERROR(message.Parse(buffer));
//     RETURN_IF_ERROR(receiver.Take(message));
//   }
//   if (!receiver.complete()) ... receiver.Progress() says how far it got
//
// Errors (Take): INVALID_ARGUMENT for a chunk of the wrong tensor, at the
// wrong offset, not whole elements (floats, or 16-bit values), or past the
// tensor's end.
// Threading: one thread per stream, as gRPC's streams.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_STREAM_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_STREAM_H_

#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/ps/transport/tensor_codec.h"

namespace gradsync {

inline absl::Span<char> AsWritableBytes(absl::Span<float> floats) {
  return absl::Span<char>(reinterpret_cast<char*>(floats.data()),
                          floats.size() * sizeof(float));
}

// The messages that carry `header` and tensors 0, 1, ... in chunks of at
// most `chunk_bytes` (a multiple of 4), in order; the header rides on the
// first chunk (alone if there is no data). Each message points at the
// tensors' memory and keeps `keep_alive` referenced until gRPC has sent it.
// For senders that write one message at a time (WriteTensors below, and
// the callback reactors, which start each write when the last one is done).
// Elements are fp32, or (the byte-span constructor) `element_bytes` each:
// 2 for a 16-bit job's pulls (CreateShardRequest.wire_dtype); offsets
// count elements either way.
class TensorMessages {
 public:
  TensorMessages(const google::protobuf::MessageLite* header,
                 const std::vector<absl::Span<const float>>& tensors,
                 size_t chunk_bytes, std::shared_ptr<const void> keep_alive)
      : TensorMessages(header, FloatBytes(tensors), sizeof(float), chunk_bytes,
                       std::move(keep_alive)) {}
  // `tensors` hold whole elements of `element_bytes` (2 or 4) each.
  TensorMessages(const google::protobuf::MessageLite* header,
                 std::vector<absl::Span<const char>> tensors,
                 size_t element_bytes, size_t chunk_bytes,
                 std::shared_ptr<const void> keep_alive)
      : header_(header),
        tensors_(std::move(tensors)),
        element_bytes_(element_bytes),
        chunk_bytes_(std::max<size_t>(1, chunk_bytes / element_bytes) *
                     element_bytes),
        keep_alive_(std::move(keep_alive)) {
    SkipEmpty();
  }

  bool done() const { return header_ == nullptr && tensor_ == tensors_.size(); }
  // The next message; call only while !done().
  grpc::ByteBuffer Next() {
    if (tensor_ == tensors_.size()) {  // no data at all: the header alone
      const google::protobuf::MessageLite* header = header_;
      header_ = nullptr;
      return EncodeTensorMessage(header, 0, 0, {}, nullptr);
    }
    const absl::Span<const char> tensor = tensors_[tensor_];
    const size_t n = std::min(chunk_bytes_, tensor.size() - offset_);
    grpc::ByteBuffer message =
        EncodeTensorMessage(header_, static_cast<int32_t>(tensor_),
                            static_cast<int64_t>(offset_ / element_bytes_),
                            tensor.subspan(offset_, n), keep_alive_);
    header_ = nullptr;
    offset_ += n;
    SkipEmpty();
    return message;
  }

 private:
  static std::vector<absl::Span<const char>> FloatBytes(
      const std::vector<absl::Span<const float>>& tensors) {
    std::vector<absl::Span<const char>> bytes;
    bytes.reserve(tensors.size());
    for (absl::Span<const float> t : tensors) bytes.push_back(AsBytes(t));
    return bytes;
  }

  // Moves past finished (or empty) tensors.
  void SkipEmpty() {
    while (tensor_ < tensors_.size() && offset_ == tensors_[tensor_].size()) {
      ++tensor_;
      offset_ = 0;
    }
  }

  const google::protobuf::MessageLite* header_;  // null once sent
  const std::vector<absl::Span<const char>> tensors_;
  const size_t element_bytes_;
  const size_t chunk_bytes_;  // whole elements
  const std::shared_ptr<const void> keep_alive_;
  size_t tensor_ = 0;
  size_t offset_ = 0;  // bytes of tensors_[tensor_] already sent
};

// Writes TensorMessages(header, tensors, chunk_bytes, keep_alive) to
// `writer`. Returns false when the stream broke (the peer went away or
// failed the call; its status tells why).
template <typename Writer>
bool WriteTensors(Writer* writer, const google::protobuf::MessageLite* header,
                  absl::Span<const absl::Span<const float>> tensors,
                  size_t chunk_bytes,
                  const std::shared_ptr<const void>& keep_alive) {
  TensorMessages messages(
      header,
      std::vector<absl::Span<const float>>(tensors.begin(), tensors.end()),
      chunk_bytes, keep_alive);
  while (!messages.done()) {
    if (!writer->Write(messages.Next())) return false;
  }
  return true;
}

class TensorReceiver {
 public:
  // Tensor i of the stream goes to tensors[i]; their sizes are what the
  // stream must deliver, in order, in elements of `element_bytes` (4:
  // fp32; 2: a 16-bit job's pulled parameters).
  explicit TensorReceiver(std::vector<absl::Span<char>> tensors,
                          size_t element_bytes = sizeof(float));

  // Copies the data of `message` into place; messages without data (a
  // header alone) are ignored.
  [[nodiscard]] absl::Status Take(const DecodedTensorMessage& message);

  bool complete();
  size_t received_bytes() const { return received_; }
  // Where the stream stands, for errors: "tensor 1: 4096 of 8192 bytes".
  std::string Progress() const;

 private:
  void SkipFilled();

  std::vector<absl::Span<char>> tensors_;
  size_t element_bytes_;
  size_t current_ = 0;   // the tensor being filled
  size_t filled_ = 0;    // bytes of it received
  size_t received_ = 0;  // bytes of all tensors received
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_STREAM_H_
