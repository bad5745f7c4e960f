#include "server/coordinator/ps_placement.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace gradsync {

absl::flat_hash_map<std::string, int> ShardLoad(const JobTable& jobs,
                                                const Job* except) {
  absl::flat_hash_map<std::string, int> load;
  for (const Job* other : jobs.All()) {
    if (other == except || IsFinal(other->state())) continue;
    for (const ShardPlacement& shard : other->ps_shards()) ++load[shard.ps_id];
  }
  return load;
}

std::vector<ShardPlacement> PlaceShards(
    int requested, std::vector<const PsRecord*> live,
    const absl::flat_hash_map<std::string, int>& load) {
  auto load_of = [&load](const PsRecord* server) {
    auto it = load.find(server->id);
    return it == load.end() ? 0 : it->second;
  };
  std::stable_sort(live.begin(), live.end(),
                   [&](const PsRecord* a, const PsRecord* b) {
                     return std::make_tuple(load_of(a), a->number) <
                            std::make_tuple(load_of(b), b->number);
                   });
  const int count = requested > 0 ? requested : static_cast<int>(live.size());
  std::vector<ShardPlacement> shards;
  shards.reserve(count);
  for (int k = 0; k < count; ++k) {
    const PsRecord* server = live[k % live.size()];
    shards.push_back({server->id, server->address});
  }
  return shards;
}

bool HasLostShard(const Job& job, const PsRegistry& servers) {
  for (const ShardPlacement& shard : job.ps_shards()) {
    const PsRecord* server = servers.Find(shard.ps_id);
    if (server == nullptr || server->lost) return true;
  }
  return false;
}

}  // namespace gradsync
