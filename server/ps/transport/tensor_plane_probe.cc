#include "server/ps/transport/tensor_plane_probe.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/little_endian.h"

namespace gradsync {
namespace tensor_plane {
void EncodeProbeHead(const ProbeHead& head, char* out) {
  PutLittleEndian32(out, kProbeMagic);
  PutLittleEndian32(out + 4, static_cast<uint32_t>(head.op));
  PutLittleEndian32(out + 8, head.round_trips);
  PutLittleEndian32(out + 12, 0);
  PutLittleEndian64(out + 16, static_cast<uint64_t>(head.bytes));
}

bool StartsWithProbeMagic(const char* in) {
  return GetLittleEndian32(in) == kProbeMagic;
}

absl::StatusOr<ProbeHead> DecodeProbeHead(const char* in) {
  if (!StartsWithProbeMagic(in)) {
    return absl::InvalidArgumentError("not a tensor plane probe request");
  }
  const uint32_t op = GetLittleEndian32(in + 4);
  ProbeHead head;
  head.round_trips = GetLittleEndian32(in + 8);
  const uint64_t bytes = GetLittleEndian64(in + 16);
  switch (op) {
    case static_cast<uint32_t>(ProbeOp::kRoundTrips):
      head.op = ProbeOp::kRoundTrips;
      if (head.round_trips < 1 || head.round_trips > kMaxProbeRoundTrips) {
        return absl::InvalidArgumentError(
            absl::StrCat("a tensor plane probe of ", head.round_trips,
                         " round trips; give 1 to ", kMaxProbeRoundTrips));
      }
      return head;
    case static_cast<uint32_t>(ProbeOp::kUpload):
    case static_cast<uint32_t>(ProbeOp::kDownload):
      head.op = static_cast<ProbeOp>(op);
      if (bytes < 1 || bytes > static_cast<uint64_t>(kMaxProbeBytes)) {
        return absl::InvalidArgumentError(
            absl::StrCat("a tensor plane probe stream of ", bytes,
                         " bytes; give 1 to ", kMaxProbeBytes, " (4 GiB)"));
      }
      head.bytes = static_cast<int64_t>(bytes);
      return head;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a tensor plane probe with op ", op,
          " this server does not know; run one gradsync version on workers "
          "and servers"));
  }
}

void EncodeGoodput(double goodput_Bps, char* out) {
  uint64_t bits = 0;
  std::memcpy(&bits, &goodput_Bps, sizeof(bits));
  PutLittleEndian64(out, bits);
}

double DecodeGoodput(const char* in) {
  const uint64_t bits = GetLittleEndian64(in);
  double goodput = 0;
  std::memcpy(&goodput, &bits, sizeof(goodput));
  return goodput;
}

}  // namespace tensor_plane
}  // namespace gradsync
