#include "server/ps/transport/tensor_plane_wire.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/little_endian.h"

namespace gradsync {
namespace tensor_plane {
namespace {

[[nodiscard]] absl::Status CheckHeaderBytes(uint32_t bytes,
                                            absl::string_view what) {
  if (bytes > kMaxHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a tensor plane ", what, " announces ", bytes,
                     " header bytes; at most ", kMaxHeaderBytes));
  }
  return absl::OkStatus();
}

}  // namespace

void EncodeRequestHead(const RequestHead& head, char* out) {
  PutLittleEndian32(out, head.magic);
  PutLittleEndian32(out + 4, head.header_bytes);
}

void EncodeChunkHead(const ChunkHead& head, char* out) {
  PutLittleEndian64(out, static_cast<uint64_t>(head.offset));
  PutLittleEndian64(out + 8, head.bytes);
}

void EncodeReplyHead(const ReplyHead& head, char* out) {
  PutLittleEndian32(out, head.magic);
  PutLittleEndian32(out + 4, head.code);
  PutLittleEndian32(out + 8, head.header_bytes);
  PutLittleEndian32(out + 12, head.reserved);
  PutLittleEndian64(out + 16, head.param_bytes);
}

std::string EncodeErrorReply(const absl::Status& error) {
  const absl::string_view message = error.message();
  ReplyHead head;
  head.code = static_cast<uint32_t>(error.code());
  head.header_bytes =
      static_cast<uint32_t>(std::min<size_t>(message.size(), kMaxHeaderBytes));
  std::string out(kReplyHeadBytes, '\0');
  EncodeReplyHead(head, out.data());
  out.append(message.data(), head.header_bytes);
  return out;
}

absl::StatusOr<RequestHead> DecodeRequestHead(const char* in) {
  RequestHead head;
  head.magic = GetLittleEndian32(in);
  head.header_bytes = GetLittleEndian32(in + 4);
  if (head.magic != kRequestMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a tensor plane request (magic 0x", absl::Hex(head.magic),
        "): another protocol on the PS's tensor port, or a stream out of "
        "step"));
  }
  if (absl::Status s = CheckHeaderBytes(head.header_bytes, "request");
      !s.ok()) {
    return s;
  }
  return head;
}

absl::StatusOr<ReplyHead> DecodeReplyHead(const char* in) {
  ReplyHead head;
  head.magic = GetLittleEndian32(in);
  head.code = GetLittleEndian32(in + 4);
  head.header_bytes = GetLittleEndian32(in + 8);
  head.reserved = GetLittleEndian32(in + 12);
  head.param_bytes = GetLittleEndian64(in + 16);
  if (head.magic != kReplyMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a tensor plane reply (magic 0x", absl::Hex(head.magic),
        "): the address is not a PS tensor port, or the stream is out of "
        "step"));
  }
  if (head.code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a tensor plane reply with status code ", head.code,
                     ", which is no status code"));
  }
  if (absl::Status s = CheckHeaderBytes(head.header_bytes, "reply"); !s.ok()) {
    return s;
  }
  return head;
}

ChunkHead DecodeChunkHead(const char* in) {
  ChunkHead head;
  head.offset = static_cast<int64_t>(GetLittleEndian64(in));
  head.bytes = GetLittleEndian64(in + 8);
  return head;
}

absl::Status ValidateChunk(const ChunkHead& chunk, size_t size_bytes,
                           size_t filled_bytes, bool descending,
                           size_t element_bytes) {
  const size_t e = element_bytes;
  const size_t elements = size_bytes / e;
  if (chunk.bytes == 0 || chunk.bytes % e != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk of ", chunk.bytes,
                     " bytes; it must hold one or more "
                     "whole ",
                     e == sizeof(float) ? "fp32" : "16-bit", " values"));
  }
  const uint64_t n = chunk.bytes / e;
  if (chunk.offset < 0 || static_cast<uint64_t>(chunk.offset) > elements ||
      n > elements - static_cast<uint64_t>(chunk.offset)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk of ", n, " elements at element ",
                     chunk.offset, " is outside the shard's ", elements,
                     " elements; the sender's sizes do not match the shard's"));
  }
  const size_t at = static_cast<size_t>(chunk.offset) * e;
  if (!descending && at != filled_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a gradient chunk starts at element ", chunk.offset, ", expected ",
        filled_bytes / e,
        "; ascending chunks must follow each other without gaps or "
        "overlaps"));
  }
  if (descending && at + chunk.bytes != size_bytes - filled_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a descending gradient chunk covers elements [", chunk.offset, ", ",
        (at + chunk.bytes) / e, "), expected one that ends at element ",
        (size_bytes - filled_bytes) / e,
        "; descending chunks must precede each other without gaps or "
        "overlaps"));
  }
  return absl::OkStatus();
}

}  // namespace tensor_plane
}  // namespace gradsync
