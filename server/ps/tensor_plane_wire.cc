#include "server/ps/tensor_plane_wire.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace tensor_plane {
namespace {

void Put32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
void Put64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
uint32_t Get32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}
uint64_t Get64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

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
  Put32(head.magic, out);
  Put32(head.header_bytes, out + 4);
}

void EncodeChunkHead(const ChunkHead& head, char* out) {
  Put64(static_cast<uint64_t>(head.offset), out);
  Put64(head.bytes, out + 8);
}

void EncodeReplyHead(const ReplyHead& head, char* out) {
  Put32(head.magic, out);
  Put32(head.code, out + 4);
  Put32(head.header_bytes, out + 8);
  Put32(head.reserved, out + 12);
  Put64(head.param_bytes, out + 16);
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
  head.magic = Get32(in);
  head.header_bytes = Get32(in + 4);
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
  head.magic = Get32(in);
  head.code = Get32(in + 4);
  head.header_bytes = Get32(in + 8);
  head.reserved = Get32(in + 12);
  head.param_bytes = Get64(in + 16);
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
  head.offset = static_cast<int64_t>(Get64(in));
  head.bytes = Get64(in + 8);
  return head;
}

absl::Status ValidateChunk(const ChunkHead& chunk, size_t size_bytes,
                           size_t filled_bytes, bool descending) {
  const size_t floats = size_bytes / sizeof(float);
  if (chunk.bytes == 0 || chunk.bytes % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk of ", chunk.bytes,
                     " bytes; it must hold one or more whole fp32 values"));
  }
  const uint64_t n = chunk.bytes / sizeof(float);
  if (chunk.offset < 0 || static_cast<uint64_t>(chunk.offset) > floats ||
      n > floats - static_cast<uint64_t>(chunk.offset)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk of ", n, " elements at element ",
                     chunk.offset, " is outside the shard's ", floats,
                     " elements; the sender's sizes do not match the shard's"));
  }
  const size_t at = static_cast<size_t>(chunk.offset) * sizeof(float);
  if (!descending && at != filled_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a gradient chunk starts at element ", chunk.offset, ", expected ",
        filled_bytes / sizeof(float),
        "; ascending chunks must follow each other without gaps or "
        "overlaps"));
  }
  if (descending && at + chunk.bytes != size_bytes - filled_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a descending gradient chunk covers elements [", chunk.offset, ", ",
        (at + chunk.bytes) / sizeof(float),
        "), expected one that ends at element ",
        (size_bytes - filled_bytes) / sizeof(float),
        "; descending chunks must precede each other without gaps or "
        "overlaps"));
  }
  return absl::OkStatus();
}

}  // namespace tensor_plane
}  // namespace gradsync
