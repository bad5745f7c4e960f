// Link probes on the PS tensor plane: how `gradsync links probe` measures
// the links of a parameter server's host (models/link_probe/link_probe_spec.h).
// A link-probe job's rank connects to the server's tensor port, proves the
// job's PS token with the plane's own handshake
// (tensor_plane_handshake.h), and then sends probe requests instead of
// pushes, timed as the probe between workers times its links
// (collectives/transports/tcp/link_timing.h):
//
//   C -> S  ProbeHead   magic "GSPB", the op, the round trips, 0, and the
//                       bytes (u64); little-endian, kProbeHeadBytes
//   S -> C  ReplyHead   OK (param_bytes: what the server will send), or an
//                       error reply and the close (tensor_plane_wire.h)
//   then, by op:
//     kRoundTrips  `round_trips` pings of 8 bytes, each echoed
//     kUpload      C streams `bytes` of filler; S times what comes after
//                  the first eighth and answers a ReplyHead, OK with 8
//                  header bytes: that goodput, an f64 in bytes/s
//     kDownload    S streams `bytes` of filler; C times it
//
// A connection carries probes or pushes, never both: a server refuses a
// probe on a connection that pushed, and a push on one that probed, so
// that a probe never races a reply for the writer.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_PROBE_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_PROBE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace gradsync {
namespace tensor_plane {

inline constexpr uint32_t kProbeMagic = 0x42505347;  // "GSPB"
inline constexpr size_t kProbeHeadBytes = 24;
// What a probe may ask of a server at once: as much as a link-probe job's
// spec allows (models/link_probe/link_probe_spec.h).
inline constexpr int64_t kMaxProbeBytes = int64_t{4} << 30;
inline constexpr uint32_t kMaxProbeRoundTrips = 10000;

enum class ProbeOp : uint32_t {
  kRoundTrips = 1,
  kUpload = 2,
  kDownload = 3,
};

struct ProbeHead {
  ProbeOp op = ProbeOp::kRoundTrips;
  uint32_t round_trips = 0;
  int64_t bytes = 0;
};

void EncodeProbeHead(const ProbeHead& head, char* out);
// Whether the 4 bytes at `in` are kProbeMagic.
bool StartsWithProbeMagic(const char* in);
// kProbeHeadBytes at `in`. INVALID_ARGUMENT naming what is wrong: another
// magic, an unknown op, round trips or bytes over the limits (or none for
// the op that needs them).
[[nodiscard]] absl::StatusOr<ProbeHead> DecodeProbeHead(const char* in);

// kUpload's answer: the goodput as 8 little-endian bytes of an f64.
inline constexpr size_t kGoodputBytes = 8;
void EncodeGoodput(double goodput_Bps, char* out);
double DecodeGoodput(const char* in);

}  // namespace tensor_plane
}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_PROBE_H_
