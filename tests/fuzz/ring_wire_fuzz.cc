// Fuzz target: what a ring rank reads from a socket before it trusts it,
// the handshake (fields, then the proof of the job secret) and the header
// of every collective (collectives/transports/tcp/wire.h). Any bytes must be
// answered with a reply code or a status, never a crash or an out-of-bounds
// read; only a well-formed handshake with the right proof may be accepted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collectives/algorithms/collective_header.h"
#include "collectives/transports/tcp/wire.h"

namespace {

constexpr char kJob[] = "job-7/1";
constexpr char kSecret[] = "the job secret of the fuzzed ring";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gradsync::Handshake;
  Handshake hs;
  std::memset(&hs, 0, sizeof(hs));
  std::memcpy(&hs, data, std::min(size, sizeof(hs)));
  const gradsync::HandshakeReply reply =
      gradsync::CheckHandshake(hs, kJob, /*my_rank=*/0, /*world_size=*/4);
  (void)gradsync::HandshakeReplyName(reply);
  (void)gradsync::DescribeHandshake(hs);
  // The proof that follows the handshake.
  uint8_t nonce[gradsync::kNonceBytes] = {};
  uint8_t proof[gradsync::kProofBytes] = {};
  if (size > sizeof(hs)) {
    std::memcpy(proof, data + sizeof(hs),
                std::min(size - sizeof(hs), sizeof(proof)));
  }
  const bool proved = gradsync::CheckHandshakeProof(
      kSecret, gradsync::HandshakeRole::kConnector, hs, nonce, proof);
  // Random bytes never prove the secret (2^-256).
  if (proved && reply == gradsync::HandshakeReply::kAccepted &&
      std::string(reinterpret_cast<const char*>(proof), sizeof(proof)) !=
          gradsync::HandshakeProofOf(
              kSecret, gradsync::HandshakeRole::kConnector, hs, nonce)) {
    abort();
  }
  // A collective's header.
  gradsync::CollectiveHeader got;
  std::memset(&got, 0, sizeof(got));
  std::memcpy(&got, data, std::min(size, sizeof(got)));
  gradsync::CollectiveHeader want{};
  want.magic = gradsync::kHeaderMagic;
  want.seq = 1;
  want.count = 1024;
  want.from_rank = 0;
  (void)gradsync::CheckHeader(want, got, /*peer_rank=*/1);
  (void)gradsync::DescribeCollective(got);
  return 0;
}
