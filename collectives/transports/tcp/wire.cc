#include "collectives/transports/tcp/wire.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "security/secret.h"

namespace gradsync {

absl::string_view HandshakeReplyName(HandshakeReply reply) {
  switch (reply) {
    case HandshakeReply::kAccepted:
      return "accepted";
    case HandshakeReply::kBadMagic:
      return "not a gradsync connection (bad magic or version)";
    case HandshakeReply::kWrongJob:
      return "job/generation id differs";
    case HandshakeReply::kWrongRank:
      return "rank numbers do not match this connection";
    case HandshakeReply::kWrongWorldSize:
      return "world size differs";
    case HandshakeReply::kDuplicate:
      return "that rank is already connected";
    case HandshakeReply::kBadProof:
      return "no proof of the job secret (not a rank of this job)";
  }
  return "unknown reply";
}

Handshake MakeHandshake(absl::string_view job_id, int from_rank, int to_rank,
                        int world_size) {
  Handshake hs;
  std::memset(&hs, 0, sizeof(hs));
  hs.magic = kHandshakeMagic;
  hs.version = kTcpWireVersion;
  hs.from_rank = from_rank;
  hs.to_rank = to_rank;
  hs.world_size = world_size;
  hs.job_id_len =
      static_cast<uint32_t>(std::min(job_id.size(), kMaxJobIdBytes));
  std::memcpy(hs.job_id, job_id.data(), hs.job_id_len);
  const std::string nonce = RandomSecret(kNonceBytes);
  std::memcpy(hs.nonce, nonce.data(), kNonceBytes);
  return hs;
}

std::string HandshakeProofOf(absl::string_view secret, HandshakeRole role,
                             const Handshake& hs,
                             const uint8_t (&acceptor_nonce)[kNonceBytes]) {
  if (secret.empty()) return std::string(kProofBytes, '\0');
  // The handshake as sent (nonce included) and the acceptor's nonce.
  std::string message(role == HandshakeRole::kAcceptor
                          ? "gradsync ring acceptor\n"
                          : "gradsync ring connector\n");
  message.append(reinterpret_cast<const char*>(&hs), sizeof(hs));
  message.append(reinterpret_cast<const char*>(acceptor_nonce), kNonceBytes);
  return HmacSha256(secret, message);
}

bool CheckHandshakeProof(absl::string_view secret, HandshakeRole role,
                         const Handshake& hs,
                         const uint8_t (&acceptor_nonce)[kNonceBytes],
                         const uint8_t (&proof)[kProofBytes]) {
  if (secret.empty()) return true;
  return SecretsEqual(
      HandshakeProofOf(secret, role, hs, acceptor_nonce),
      absl::string_view(reinterpret_cast<const char*>(proof), kProofBytes));
}

HandshakeReply CheckHandshake(const Handshake& hs, absl::string_view job_id,
                              int my_rank, int world_size) {
  if (hs.magic != kHandshakeMagic || hs.version != kTcpWireVersion ||
      hs.job_id_len > kMaxJobIdBytes) {
    return HandshakeReply::kBadMagic;
  }
  const absl::string_view theirs(hs.job_id, hs.job_id_len);
  if (theirs != job_id.substr(0, kMaxJobIdBytes)) {
    return HandshakeReply::kWrongJob;
  }
  if (hs.world_size != world_size) return HandshakeReply::kWrongWorldSize;
  if (hs.to_rank != my_rank || hs.from_rank <= my_rank ||
      hs.from_rank >= world_size) {
    return HandshakeReply::kWrongRank;
  }
  return HandshakeReply::kAccepted;
}

std::string DescribeHandshake(const Handshake& hs) {
  if (hs.magic != kHandshakeMagic) {
    return absl::StrFormat("garbage (magic 0x%08x)", hs.magic);
  }
  return absl::StrCat(
      "rank ", hs.from_rank, " of ", hs.world_size, " for rank ", hs.to_rank,
      " in job '",
      absl::string_view(hs.job_id,
                        std::min<size_t>(hs.job_id_len, kMaxJobIdBytes)),
      "'");
}

ShmHello MakeShmHello(bool allows_shm, absl::string_view host_id) {
  ShmHello h;
  std::memset(&h, 0, sizeof(h));
  h.magic = kShmHelloMagic;
  h.version = kTcpWireVersion;
  h.allows_shm = allows_shm ? 1 : 0;
  h.host_id_len =
      static_cast<uint32_t>(std::min(host_id.size(), kMaxHostIdBytes));
  std::memcpy(h.host_id, host_id.data(), h.host_id_len);
  return h;
}

}  // namespace gradsync
