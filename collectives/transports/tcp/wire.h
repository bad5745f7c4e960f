// Wire formats of the TCP transport: the connection handshake and the
// shared-memory negotiation. (The header that starts every collective on
// every pair is the algorithms', collectives/algorithms/collective_header.h.)
//
// The handshake, connecting rank C to accepting rank A:
//   C -> A  Handshake: job id, both ranks, world size, C's nonce
//   A -> C  HandshakeAnswer: a HandshakeReply; when A accepts the fields,
//           A's nonce and A's proof of the job secret
//   C -> A  HandshakeProof: C's proof (C first checks A's: a listener
//           without the secret learns nothing and gets nothing)
//   A -> C  the final HandshakeReply (kAccepted, or kBadProof)
// A proof is HMAC-SHA256(job secret, role || both nonces || the fields),
// so it is good for this connection only and the secret never crosses
// the wire (security/secret.h). A job without a secret (TcpOptions.job_secret
// empty: benches, tests) sends zero proofs and checks none; a rank with a
// secret refuses a peer without it.
//
// Then both ranks of every connection choose its transport
// (shm_upgrade.h):
//   C <-> A ShmHello: shared memory allowed?, host identity (both ways)
// and, only if both allow it and the identities are equal:
//   A -> C  ShmOffer: the name and token of a fresh shm segment
//   C -> A  ShmAck: mapped (the connection then stays idle), or not
//
// All are fixed-size structs sent as raw bytes (all ranks of a job run the
// same build on little-endian x86-64 or arm64 hosts). A magic number and a
// version catch stray connections and garbage; the fields below let a rank
// name exactly what its peer disagrees about.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_WIRE_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_WIRE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "collectives/types.h"

namespace gradsync {

inline constexpr uint32_t kHandshakeMagic = 0x47534843;  // "GSHC"
inline constexpr uint32_t kTcpWireVersion = 3;  // 2: secret proof, 3: shm
inline constexpr uint32_t kShmHelloMagic = 0x47535348;  // "GSSH"
inline constexpr size_t kMaxJobIdBytes = 96;
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kProofBytes = 32;  // HMAC-SHA256

// Sent by the connecting (higher) rank right after connect().
struct Handshake {
  uint32_t magic;
  uint32_t version;
  int32_t from_rank;
  int32_t to_rank;
  int32_t world_size;
  uint32_t job_id_len;
  char job_id[kMaxJobIdBytes];
  uint8_t nonce[kNonceBytes];
};

// The accepting rank's answer.
enum class HandshakeReply : uint32_t {
  kAccepted = 0,
  kBadMagic = 1,
  kWrongJob = 2,
  kWrongRank = 3,
  kWrongWorldSize = 4,
  kDuplicate = 5,
  kBadProof = 6,
};
absl::string_view HandshakeReplyName(HandshakeReply reply);

// The accepting rank's first answer.
struct HandshakeAnswer {
  uint32_t reply;  // HandshakeReply
  uint8_t nonce[kNonceBytes];
  uint8_t proof[kProofBytes];
};

// The connecting rank's proof.
struct HandshakeProof {
  uint8_t proof[kProofBytes];
};

// With a fresh random nonce.
Handshake MakeHandshake(absl::string_view job_id, int from_rank, int to_rank,
                        int world_size);

// Which side proves.
enum class HandshakeRole { kAcceptor, kConnector };

// The proof of `role` for the connection that `hs` opened and whose
// acceptor chose `acceptor_nonce`: HMAC-SHA256 under `secret`, or zeros
// when `secret` is empty.
std::string HandshakeProofOf(absl::string_view secret, HandshakeRole role,
                             const Handshake& hs,
                             const uint8_t (&acceptor_nonce)[kNonceBytes]);

// True when `proof` is what `role` must send; always true for an empty
// `secret` (no check), constant-time otherwise.
bool CheckHandshakeProof(absl::string_view secret, HandshakeRole role,
                         const Handshake& hs,
                         const uint8_t (&acceptor_nonce)[kNonceBytes],
                         const uint8_t (&proof)[kProofBytes]);
// Checks a received handshake against what this rank expects; the
// connecting rank learns the outcome from the reply code.
HandshakeReply CheckHandshake(const Handshake& hs, absl::string_view job_id,
                              int my_rank, int world_size);
std::string DescribeHandshake(const Handshake& hs);

// A host identity (collectives/host_identity.h): a host name of up to 64
// bytes, the boot id and the network namespace fit whole.
inline constexpr size_t kMaxHostIdBytes = 160;
inline constexpr size_t kMaxShmNameBytes = 64;
inline constexpr size_t kShmOfferTokenBytes = 16;

struct ShmHello {
  uint32_t magic;  // kShmHelloMagic, in all three
  uint32_t version;
  uint32_t allows_shm;
  uint32_t host_id_len;
  char host_id[kMaxHostIdBytes];
};

struct ShmOffer {
  uint32_t magic;
  uint32_t ok;  // 0: no segment (the acceptor could not create one)
  char name[kMaxShmNameBytes];
  uint8_t token[kShmOfferTokenBytes];
};

struct ShmAck {
  uint32_t magic;
  uint32_t ok;  // 1: mapped
};

// A hello carrying `host_id` (truncated to kMaxHostIdBytes).
ShmHello MakeShmHello(bool allows_shm, absl::string_view host_id);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_WIRE_H_
