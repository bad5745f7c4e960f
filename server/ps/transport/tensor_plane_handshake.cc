#include "server/ps/transport/tensor_plane_handshake.h"

#include "absl/strings/str_cat.h"
#include "security/secret.h"

namespace gradsync {
namespace tensor_plane {
namespace {

void Put32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}
uint32_t Get32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

}  // namespace

Hello MakeHello(absl::string_view job_id, int rank) {
  Hello hello;
  hello.rank = rank;
  hello.job_bytes = static_cast<uint32_t>(job_id.size());
  hello.nonce = RandomSecret(kNonceBytes);
  return hello;
}

void EncodeHello(const Hello& hello, char* out) {
  Put32(hello.magic, out);
  Put32(hello.version, out + 4);
  Put32(static_cast<uint32_t>(hello.rank), out + 8);
  Put32(hello.job_bytes, out + 12);
  for (size_t i = 0; i < kNonceBytes; ++i) {
    out[16 + i] = i < hello.nonce.size() ? hello.nonce[i] : '\0';
  }
}

bool StartsWithHelloMagic(const char* in) { return Get32(in) == kHelloMagic; }

absl::StatusOr<Hello> DecodeHello(const char* in) {
  Hello hello;
  hello.magic = Get32(in);
  hello.version = Get32(in + 4);
  hello.rank = static_cast<int32_t>(Get32(in + 8));
  hello.job_bytes = Get32(in + 12);
  hello.nonce.assign(in + 16, kNonceBytes);
  if (hello.magic != kHelloMagic) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a tensor plane hello (magic 0x", absl::Hex(hello.magic),
        "): another protocol on the PS's tensor port, or a client of a "
        "gradsync without the plane's handshake"));
  }
  if (hello.version != kPlaneVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a tensor plane client of wire version ", hello.version,
        "; this server speaks version ", kPlaneVersion,
        ". Run one gradsync version on the workers and the servers"));
  }
  if (hello.job_bytes == 0 || hello.job_bytes > kMaxJobIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a tensor plane hello announces a job id of ",
                     hello.job_bytes, " bytes; 1 to ", kMaxJobIdBytes));
  }
  return hello;
}

std::string PlaneProof(absl::string_view token, PlaneRole role,
                       const Hello& hello, absl::string_view job_id,
                       absl::string_view server_nonce) {
  if (token.empty()) return std::string(kProofBytes, '\0');
  const std::string message = absl::StrCat(
      role == PlaneRole::kServer ? "gradsync tensor plane server"
                                 : "gradsync tensor plane client",
      "|", hello.nonce, "|", server_nonce, "|", job_id, "|", hello.rank);
  return HmacSha256(token, message);
}

bool CheckPlaneProof(absl::string_view token, PlaneRole role,
                     const Hello& hello, absl::string_view job_id,
                     absl::string_view server_nonce, absl::string_view proof) {
  if (token.empty()) return true;
  return SecretsEqual(PlaneProof(token, role, hello, job_id, server_nonce),
                      proof);
}

}  // namespace tensor_plane
}  // namespace gradsync
