// The PS tensor plane's wire: PushPull (proto/ps.proto) over a plain TCP
// connection instead of a gRPC stream, for clusters where gRPC's
// per-message work, not the links, bounds the parameter server
// (docs/performance/ps-transport.md). The calls that set shards up, seed,
// fetch and release them stay on gRPC; only the step's tensors move here.
//
// A connection carries one client's requests to one server, one after
// another; the server answers them in the same order, so a client can
// push the next request (a partition) while it reads the previous reply.
// All integers are little-endian.
//
//   request   RequestHead  magic "GSPQ", the PushHeader's byte count
//             PushHeader   (job, token, shard, rank, step, descending,
//                          scalars, trailer_scalars, switch_epoch,
//                          pull_only; chunk_bytes is ignored)
//             unless pull_only, chunks until the shard's whole gradient
//             is in, in the push's order (PushHeader.descending):
//               ChunkHead  the chunk's first element within the shard,
//                          and its byte count (whole fp32 values, > 0)
//               the chunk's fp32 values (2-byte bf16/fp16 values for a
//               shard created with a 16-bit wire_dtype, as the reply's
//               parameters)
//             then, if trailer_scalars > 0, that many f64 step scalars
//   reply     ReplyHead    magic "GSPR", a status code (absl's; 0 OK), the
//                          byte count of what follows it: the PullHeader
//                          (OK) or the error message, and of the
//                          parameters
//             the PullHeader or the message, then the parameters (fp32,
//             the shard's whole range)
//
// After an error reply the server closes the connection: what the client
// still sends for that request is read and dropped, never parsed.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_WIRE_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace tensor_plane {

// Where a client finds a server's tensor plane: every GetShardStats reply
// of a server that serves one carries this initial metadata, the port (on
// the host of its gRPC address) in decimal. Metadata rather than a
// ParameterServer field keeps the plane an addition that peers without it
// ignore.
inline constexpr char kTensorPortMetadata[] = "gradsync-tensor-port";

inline constexpr uint32_t kRequestMagic = 0x51505347;  // "GSPQ"
inline constexpr uint32_t kReplyMagic = 0x52505347;    // "GSPR"
// The most a PushHeader, a PullHeader or an error message may take.
inline constexpr uint32_t kMaxHeaderBytes = 1 << 20;

struct RequestHead {
  uint32_t magic = kRequestMagic;
  uint32_t header_bytes = 0;
};
inline constexpr size_t kRequestHeadBytes = 8;

struct ChunkHead {
  int64_t offset = 0;  // elements, within the shard's range
  uint64_t bytes = 0;
};
inline constexpr size_t kChunkHeadBytes = 16;

struct ReplyHead {
  uint32_t magic = kReplyMagic;
  uint32_t code = 0;          // absl::StatusCode
  uint32_t header_bytes = 0;  // PullHeader, or the error message
  uint32_t reserved = 0;
  uint64_t param_bytes = 0;
};
inline constexpr size_t kReplyHeadBytes = 24;

void EncodeRequestHead(const RequestHead& head, char* out);
void EncodeChunkHead(const ChunkHead& head, char* out);
void EncodeReplyHead(const ReplyHead& head, char* out);
// A whole error reply for `error` (not OK): the head and its message, cut
// at kMaxHeaderBytes.
std::string EncodeErrorReply(const absl::Status& error);

// INVALID_ARGUMENT naming what is wrong: a bad magic ("not a tensor plane
// request": another protocol, or a stream out of step), a header over
// kMaxHeaderBytes.
[[nodiscard]] absl::StatusOr<RequestHead> DecodeRequestHead(const char* in);
[[nodiscard]] absl::StatusOr<ReplyHead> DecodeReplyHead(const char* in);
// As read; ValidateChunk checks it against the push.
ChunkHead DecodeChunkHead(const char* in);

// OK when `chunk` is the next piece of a push of `size_bytes` of which
// `filled_bytes` are in: inside the range, whole values of
// `element_bytes` (4: fp32; 2: a 16-bit job's gradient, whose push is
// size * 2 bytes) and offsets in elements, not empty, and (ascending)
// starting where the last one ended, or (descending) ending where the
// last one began. Else INVALID_ARGUMENT saying so.
[[nodiscard]] absl::Status ValidateChunk(const ChunkHead& chunk,
                                         size_t size_bytes, size_t filled_bytes,
                                         bool descending,
                                         size_t element_bytes = sizeof(float));

}  // namespace tensor_plane
}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_WIRE_H_
