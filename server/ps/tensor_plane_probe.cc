#include "server/ps/tensor_plane_probe.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace tensor_plane {
namespace {

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

void EncodeProbeHead(const ProbeHead& head, char* out) {
  PutU32(out, kProbeMagic);
  PutU32(out + 4, static_cast<uint32_t>(head.op));
  PutU32(out + 8, head.round_trips);
  PutU32(out + 12, 0);
  PutU64(out + 16, static_cast<uint64_t>(head.bytes));
}

bool StartsWithProbeMagic(const char* in) { return GetU32(in) == kProbeMagic; }

absl::StatusOr<ProbeHead> DecodeProbeHead(const char* in) {
  if (!StartsWithProbeMagic(in)) {
    return absl::InvalidArgumentError("not a tensor plane probe request");
  }
  const uint32_t op = GetU32(in + 4);
  ProbeHead head;
  head.round_trips = GetU32(in + 8);
  const uint64_t bytes = GetU64(in + 16);
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
  PutU64(out, bits);
}

double DecodeGoodput(const char* in) {
  const uint64_t bits = GetU64(in);
  double goodput = 0;
  std::memcpy(&goodput, &bits, sizeof(goodput));
  return goodput;
}

}  // namespace tensor_plane
}  // namespace gradsync
