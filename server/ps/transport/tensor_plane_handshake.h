// The PS tensor plane's connection handshake: before its first request, a
// connection proves that both ends know the job's PS token, the way the
// TCP ring's peers prove the job secret (collectives/transports/tcp/wire.h).
// The token never crosses the wire, and the tensors that follow are plaintext,
// as the ring's are (docs/security.md, "What travels encrypted").
//
//   C -> S  Hello      magic "GSPH", version, the rank, the job id's byte
//                      count, C's nonce; then the job id
//   S -> C  challenge  a ReplyHead (tensor_plane_wire.h): OK with
//                      kChallengeBytes of header, S's nonce and S's proof;
//                      or an error reply (an unknown version, a server
//                      not yet registered) and the close
//   C -> S  C's proof  kProofBytes; C first checks S's proof, so that a
//                      listener without the token learns nothing and gets
//                      nothing it could replay (S's nonce is fresh)
//   S -> C  verdict    a ReplyHead: OK with nothing after it, or
//                      PERMISSION_DENIED and the close
//
// A proof is HMAC-SHA256(token, role || C's nonce || S's nonce || job ||
// rank) (security/secret.h): good for this connection only. An open server
// (no coordinator: `gradsync bench`'s in-process PS) has no token; it
// proves with zeros and accepts any proof, and a client with no token
// accepts any server's. A client with a token refuses an open server, as a
// ring peer with a secret refuses one without.
//
// After the handshake the connection belongs to the job: a request for
// another job's shards is refused.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_HANDSHAKE_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_HANDSHAKE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace tensor_plane {

inline constexpr uint32_t kHelloMagic = 0x48505347;  // "GSPH"
// 1: the HMAC handshake (there was no handshake before).
inline constexpr uint32_t kPlaneVersion = 1;
inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kProofBytes = 32;  // HMAC-SHA256
inline constexpr uint32_t kMaxJobIdBytes = 256;
// S's nonce and proof, the challenge's header.
inline constexpr size_t kChallengeBytes = kNonceBytes + kProofBytes;

struct Hello {
  uint32_t magic = kHelloMagic;
  uint32_t version = kPlaneVersion;
  int32_t rank = 0;
  uint32_t job_bytes = 0;  // the job id that follows
  std::string nonce;       // kNonceBytes
};
inline constexpr size_t kHelloBytes = 16 + kNonceBytes;

// A hello from rank `rank` for `job_id`, with a fresh random nonce.
Hello MakeHello(absl::string_view job_id, int rank);
// kHelloBytes into `out` (the job id is sent after it).
void EncodeHello(const Hello& hello, char* out);
// Whether the 4 bytes at `in` are kHelloMagic: a server reads them first,
// so that another protocol's request is refused at once.
bool StartsWithHelloMagic(const char* in);
// INVALID_ARGUMENT for another protocol ("not a tensor plane hello"), or
// a job id over kMaxJobIdBytes; FAILED_PRECONDITION for another version,
// telling to run one gradsync version on workers and servers.
[[nodiscard]] absl::StatusOr<Hello> DecodeHello(const char* in);

enum class PlaneRole { kServer, kClient };

// The proof of `role` for the connection whose client said `hello` (for
// `job_id`) and whose server chose `server_nonce`: the HMAC above under
// `token`, or kProofBytes zeros when `token` is empty.
std::string PlaneProof(absl::string_view token, PlaneRole role,
                       const Hello& hello, absl::string_view job_id,
                       absl::string_view server_nonce);

// Whether `proof` is that proof: always for an empty `token`; in
// constant time otherwise.
bool CheckPlaneProof(absl::string_view token, PlaneRole role,
                     const Hello& hello, absl::string_view job_id,
                     absl::string_view server_nonce, absl::string_view proof);

}  // namespace tensor_plane
}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_HANDSHAKE_H_
