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
// Pure functions; thread-compatible.
#ifndef GRADSYNC_SERVER_COORDINATOR_PS_PLACEMENT_H_
#define GRADSYNC_SERVER_COORDINATOR_PS_PLACEMENT_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

// True when some shard of `job` sits on a lost (or unknown) server.
bool HasLostShard(const Job& job, const PsRegistry& servers);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_PS_PLACEMENT_H_
