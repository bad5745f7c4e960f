// Fuzz target: what a parameter server's tensor plane reads from a socket
// (server/ps/transport/tensor_plane_handshake.h, tensor_plane_wire.h): the
// client's hello and its proof of the job's token, then request heads and
// gradient chunks, and what a client reads back (reply heads). Any bytes must
// be answered with a status, never a crash or an out-of-bounds read; a chunk is
// accepted only inside the shard and in order; random bytes never prove the
// token.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "server/ps/transport/tensor_plane_handshake.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace {

namespace tp = gradsync::tensor_plane;

constexpr char kJob[] = "job-7";
constexpr char kToken[] = "the job's PS token of the fuzzed server";

// `n` bytes of `data` from `at` (zeros past its end).
std::string Take(const uint8_t* data, size_t size, size_t at, size_t n) {
  std::string out(n, '\0');
  if (at < size) {
    std::memcpy(out.data(), data + at, std::min(n, size - at));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The hello: first its magic alone (as the server reads it), then whole.
  const std::string hello_bytes = Take(data, size, 0, tp::kHelloBytes);
  const bool magic = tp::StartsWithHelloMagic(hello_bytes.data());
  const auto hello = tp::DecodeHello(hello_bytes.data());
  if (hello.ok() && !magic) abort();
  if (hello.ok()) {
    if (hello->job_bytes == 0 || hello->job_bytes > tp::kMaxJobIdBytes) {
      abort();
    }
    // The client's proof over a fixed server nonce.
    const std::string nonce(tp::kNonceBytes, '\x5a');
    const std::string proof =
        Take(data, size, tp::kHelloBytes, tp::kProofBytes);
    const bool proved = tp::CheckPlaneProof(kToken, tp::PlaneRole::kClient,
                                            *hello, kJob, nonce, proof);
    if (proved && proof != tp::PlaneProof(kToken, tp::PlaneRole::kClient,
                                          *hello, kJob, nonce)) {
      abort();
    }
    // The server's proof never passes for the client's.
    if (tp::PlaneProof(kToken, tp::PlaneRole::kServer, *hello, kJob, nonce) ==
        tp::PlaneProof(kToken, tp::PlaneRole::kClient, *hello, kJob, nonce)) {
      abort();
    }
  }
  // Heads, as a server and a client read them.
  const std::string head = Take(data, size, 0, tp::kReplyHeadBytes);
  const auto request = tp::DecodeRequestHead(head.data());
  if (request.ok() && request->header_bytes > tp::kMaxHeaderBytes) abort();
  const auto reply = tp::DecodeReplyHead(head.data());
  if (reply.ok() && reply->header_bytes > tp::kMaxHeaderBytes) abort();
  // A chunk against a shard whose size and fill come from the input too.
  const std::string chunk_bytes = Take(data, size, 0, tp::kChunkHeadBytes);
  const tp::ChunkHead chunk = tp::DecodeChunkHead(chunk_bytes.data());
  const std::string shape = Take(data, size, tp::kChunkHeadBytes, 5);
  const size_t floats = static_cast<uint16_t>(
      static_cast<uint8_t>(shape[0]) | static_cast<uint8_t>(shape[1]) << 8);
  const size_t size_bytes = floats * sizeof(float);
  const size_t filled =
      std::min(size_bytes, static_cast<size_t>(static_cast<uint16_t>(
                               static_cast<uint8_t>(shape[2]) |
                               static_cast<uint8_t>(shape[3]) << 8)) *
                               sizeof(float));
  const bool descending = (shape[4] & 1) != 0;
  if (tp::ValidateChunk(chunk, size_bytes, filled, descending).ok()) {
    // Accepted: whole floats, inside the shard, and where the next one goes.
    if (chunk.bytes == 0 || chunk.bytes % sizeof(float) != 0 ||
        chunk.offset < 0 ||
        static_cast<uint64_t>(chunk.offset) * sizeof(float) + chunk.bytes >
            size_bytes) {
      abort();
    }
    const uint64_t at = static_cast<uint64_t>(chunk.offset) * sizeof(float);
    if (!descending && at != filled) abort();
    if (descending && at + chunk.bytes != size_bytes - filled) abort();
  }
  return 0;
}
