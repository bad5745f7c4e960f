// Rendezvous steps of NCCL communicator creation: exchanging the
// ncclUniqueId through a Store, marking which ranks arrived, and waiting
// (bounded) for non-blocking ncclCommInitRankConfig to finish. Internal to
// collectives/nccl.
//
// Store keys (the caller's store is already namespaced per job/generation):
//   nccl/unique_id/0     "<job_id>\n<base64 of the 128-byte ncclUniqueId>",
//                        set by rank 0 (a key ending in a rank is that
//                        rank's: the coordinator lets only its worker set it)
//   nccl/joined/<rank>   "<job_id>", set by each rank before its init
//
// Threading: stateless functions; safe to call from any thread.
#ifndef GRADSYNC_COLLECTIVES_NCCL_NCCL_RENDEZVOUS_H_
#define GRADSYNC_COLLECTIVES_NCCL_NCCL_RENDEZVOUS_H_

#include <nccl.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collectives/store.h"

namespace gradsync {
namespace nccl_internal {

inline constexpr absl::string_view kUniqueIdKey = "nccl/unique_id/0";

// Creates a unique id and publishes it (is_root), or fetches the one rank 0
// published, waiting until `deadline`. `ranks` names the local ranks for
// errors ("rank 3", "ranks 4-7"). Errors: DEADLINE_EXCEEDED when no id
// arrives, FAILED_PRECONDITION when the id belongs to another job or is
// malformed, UNAVAILABLE/INTERNAL for store or NCCL failures.
[[nodiscard]] absl::StatusOr<ncclUniqueId> ExchangeUniqueId(
    Store* store, bool is_root, absl::string_view job_id,
    absl::string_view ranks, absl::Time deadline);

// Records that `rank` reached communicator init.
[[nodiscard]] absl::Status MarkJoined(Store* store, int rank,
                                      absl::string_view job_id);

// For a timed-out init of a `size`-rank communicator: "ranks 2, 3 never
// joined" from the nccl/joined keys (checking at most the first 1024
// ranks), or, when every rank joined, advice on what else blocks NCCL.
std::string DescribeMissingRanks(Store* store, int size);

// Polls the non-blocking communicators `comms` (ncclCommInitRankConfig or a
// grouped init already returned) until all report ncclSuccess, one fails,
// or `deadline` passes. On failure or timeout aborts every one of them
// (comms[i] lives on devices[i]), sets them to null and returns the error:
// DEADLINE_EXCEEDED naming `ranks`, the world size, the missing ranks (from
// the store) and `timeout_for_message`; otherwise NCCL's error.
[[nodiscard]] absl::Status AwaitInit(std::vector<ncclComm_t>& comms,
                                     const std::vector<int>& devices,
                                     Store* store, absl::string_view ranks,
                                     int world_size,
                                     absl::Duration timeout_for_message,
                                     absl::Time deadline);

// "rank 3" or "ranks 4-7".
std::string RankRange(int first, int count);

}  // namespace nccl_internal
}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_NCCL_NCCL_RENDEZVOUS_H_
