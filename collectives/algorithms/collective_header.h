// The header that starts every collective on every pair it uses
// (collectives/pair.h), whatever carries the pair (TCP or shared memory):
// which collective, its sequence number, count, type, op, root and
// algorithm, so that ranks that disagree fail before any data moves
// (CollectiveContext::ExchangeHeaders). A fixed-size struct sent as raw
// bytes, as the TCP transport's handshake (collectives/transports/tcp/
// wire.h): all ranks of a job run one build on little-endian hosts.
//
// Errors: CheckHeader's, below. Pure functions; thread-safe.
#ifndef GRADSYNC_COLLECTIVES_ALGORITHMS_COLLECTIVE_HEADER_H_
#define GRADSYNC_COLLECTIVES_ALGORITHMS_COLLECTIVE_HEADER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "collectives/types.h"

namespace gradsync {

inline constexpr uint32_t kHeaderMagic = 0x47534348;  // "GSCH"

enum class CollectiveKind : uint8_t {
  kAllReduce = 0,
  kReduceScatter = 1,
  kAllGather = 2,
  kBroadcast = 3,
  kBarrier = 4,
};
absl::string_view CollectiveName(CollectiveKind kind);

// Starts every collective on every connection it uses.
struct CollectiveHeader {
  uint32_t magic;
  uint8_t kind;
  uint8_t type;
  uint8_t op;
  uint8_t algorithm;
  uint64_t seq;
  uint64_t count;
  int32_t root;
  int32_t from_rank;
};

// "allreduce #17 (1024 x float sum)".
std::string DescribeCollective(const CollectiveHeader& h);

// OK if `got` (received from rank got.from_rank) matches `want` (this
// rank's own call); otherwise FAILED_PRECONDITION naming both ranks and the
// first field that differs, or DATA_LOSS for garbage (bad magic).
[[nodiscard]] absl::Status CheckHeader(const CollectiveHeader& want,
                                       const CollectiveHeader& got,
                                       int peer_rank);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALGORITHMS_COLLECTIVE_HEADER_H_
