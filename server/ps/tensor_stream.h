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
// wrong offset, not whole floats, or past the tensor's end.
// Threading: one thread per stream, as gRPC's streams.
#ifndef GRADSYNC_SERVER_PS_TENSOR_STREAM_H_
#define GRADSYNC_SERVER_PS_TENSOR_STREAM_H_

#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/ps/tensor_codec.h"

namespace gradsync {

inline absl::Span<char> AsWritableBytes(absl::Span<float> floats) {
  return absl::Span<char>(reinterpret_cast<char*>(floats.data()),
                          floats.size() * sizeof(float));
}

// Writes `header` and tensors 0, 1, ... in chunks of at most `chunk_bytes`
// (a multiple of 4); the header rides on the first chunk. The chunks point
// at the tensors' memory and keep `keep_alive` referenced until gRPC has
// sent them. Returns false when the stream broke (the peer went away or
// failed the call; its status tells why).
template <typename Writer>
bool WriteTensors(Writer* writer, const google::protobuf::MessageLite* header,
                  absl::Span<const absl::Span<const float>> tensors,
                  size_t chunk_bytes,
                  const std::shared_ptr<const void>& keep_alive) {
  const size_t chunk_floats = std::max<size_t>(1, chunk_bytes / sizeof(float));
  const google::protobuf::MessageLite* pending = header;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const absl::Span<const float> tensor = tensors[t];
    for (size_t offset = 0; offset < tensor.size(); offset += chunk_floats) {
      const size_t n = std::min(chunk_floats, tensor.size() - offset);
      if (!writer->Write(EncodeTensorMessage(
              pending, static_cast<int32_t>(t), static_cast<int64_t>(offset),
              AsBytes(tensor.subspan(offset, n)), keep_alive))) {
        return false;
      }
      pending = nullptr;
    }
  }
  if (pending != nullptr) {
    return writer->Write(EncodeTensorMessage(pending, 0, 0, {}, nullptr));
  }
  return true;
}

class TensorReceiver {
 public:
  // Tensor i of the stream goes to tensors[i]; their sizes are what the
  // stream must deliver, in order.
  explicit TensorReceiver(std::vector<absl::Span<char>> tensors);

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
  size_t current_ = 0;   // the tensor being filled
  size_t filled_ = 0;    // bytes of it received
  size_t received_ = 0;  // bytes of all tensors received
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TENSOR_STREAM_H_
