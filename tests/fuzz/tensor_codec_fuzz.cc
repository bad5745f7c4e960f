// Fuzz target: the parameter server's tensor messages as they arrive
// (server/ps/transport/tensor_codec.h), at a server (PushPull's pushes and
// trailers, SeedShard) or a client (pull replies, FetchState): a protobuf
// message of header, tensor, offset and data parsed in place from the received
// buffer, split into slices as gRPC may hand it over, its header read as
// each of those header types. Any bytes must parse or fail with a status;
// what parses must copy out exactly data_size() bytes, within the input.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "proto/ps.pb.h"
#include "server/ps/transport/tensor_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte picks where the buffer splits into two slices.
  const size_t split = size == 0 ? 0 : data[0] % (size + 1);
  std::vector<grpc::Slice> slices;
  slices.emplace_back(data, split);
  slices.emplace_back(data + split, size - split);
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  gradsync::DecodedTensorMessage message;
  if (!message.Parse(buffer).ok()) return 0;
  if (message.data_size() > size) abort();
  std::vector<char> out(message.data_size());
  message.CopyData(out.data());
  if (message.has_header()) {
    // As each reader takes it: a server a push's header (or its trailer's)
    // and a seed's, a client a pull reply's and a fetched state's.
    gradsync::ps::PushHeader push;
    (void)message.ParseHeader(&push);
    gradsync::ps::SeedShardHeader seed;
    (void)message.ParseHeader(&seed);
    gradsync::ps::PullHeader pull;
    (void)message.ParseHeader(&pull);
    gradsync::ps::FetchStateHeader state;
    (void)message.ParseHeader(&state);
  }
  return 0;
}
