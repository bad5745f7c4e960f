// PS shard placement: where a job's parameter-server shards go, as pure
// functions of the live servers and the shards other jobs hold.
//
// A job that needs shards (JobNeedsShardsNow) gets K = spec.ps.shards
// shards (0: one per live server) when its ranks are placed, or at its
// first runtime switch to PS if it had none. The live servers are ordered
// least loaded first (fewest shards of jobs that have not ended), ties by
// registration order, and shard k goes to server k mod (number of
// servers). A job whose shards sit on a lost server gets new ones at its
// next switch to PS.
//
// PsSpec.placement narrows the servers by host: "separate" keeps those on
// hosts that run none of the job's ranks (a PS tier of its own),
// "colocated" those on the ranks' hosts (BytePS's layout), shard k then on
// the k-th host in rank order; "any" (or empty) keeps all.
//
// Pure functions; thread-compatible.
#ifndef GRADSYNC_SERVER_COORDINATOR_PS_PLACEMENT_H_
#define GRADSYNC_SERVER_COORDINATOR_PS_PLACEMENT_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/coordinator/job.h"
#include "server/coordinator/ps_registry.h"

namespace gradsync {

// What SubmitJob, SwitchJob and a waiting job say when a job needs PS
// shards and no parameter server is live.
inline constexpr absl::string_view kNoParameterServerMessage =
    "no parameter server registered; start one with `gradsync-ps "
    "--coordinator <addr>` (or `gradsync local up --ps 1`)";

// Shards per server of the jobs other than `except` that have not ended.
absl::flat_hash_map<std::string, int> ShardLoad(const JobTable& jobs,
                                                const Job* except);

// `requested` shards (0: one per server) over the `live` servers (not
// empty), given their `load`.
std::vector<ShardPlacement> PlaceShards(
    int requested, std::vector<const PsRecord*> live,
    const absl::flat_hash_map<std::string, int>& load);

// The shards of `job` (its spec's shard count and placement; its ranks
// placed) over the `live` servers. FAILED_PRECONDITION naming the ranks'
// hosts when no live server meets the placement.
[[nodiscard]] absl::StatusOr<std::vector<ShardPlacement>> PlaceJobShards(
    const Job& job, std::vector<const PsRecord*> live,
    const absl::flat_hash_map<std::string, int>& load);

// True when some shard of `job` sits on a lost (or unknown) server.
bool HasLostShard(const Job& job, const PsRegistry& servers);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_PS_PLACEMENT_H_
