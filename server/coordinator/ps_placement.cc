#include "server/coordinator/ps_placement.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

absl::StatusOr<std::vector<ShardPlacement>> PlaceJobShards(
    const Job& job, std::vector<const PsRecord*> live,
    const absl::flat_hash_map<std::string, int>& load) {
  const std::string& placement = job.spec().ps().placement();
  if (placement != "separate" && placement != "colocated") {
    return PlaceShards(job.spec().ps().shards(), std::move(live), load);
  }
  // The hosts of the job's ranks, in rank order (first rank first).
  std::vector<std::string> hosts;
  for (const RankRecord& rank : job.ranks()) {
    if (std::find(hosts.begin(), hosts.end(), rank.slot.host) == hosts.end()) {
      hosts.push_back(rank.slot.host);
    }
  }
  auto host_order = [&](const PsRecord* server) {
    return static_cast<int>(
        std::find(hosts.begin(), hosts.end(), server->host) - hosts.begin());
  };
  const int off_hosts = static_cast<int>(hosts.size());
  const bool colocated = placement == "colocated";
  live.erase(std::remove_if(live.begin(), live.end(),
                            [&](const PsRecord* server) {
                              return (host_order(server) < off_hosts) !=
                                     colocated;
                            }),
             live.end());
  if (live.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.id(), " asks for ", placement,
        " parameter servers (ps.placement), but no live server runs ",
        colocated ? "on" : "off", " the hosts of its ranks (",
        absl::StrJoin(hosts, ", "), "); start gradsync-ps ",
        colocated ? "on those hosts" : "on other hosts",
        " or submit with --ps-placement any"));
  }
  if (!colocated) {
    return PlaceShards(job.spec().ps().shards(), std::move(live), load);
  }
  // Colocated: shard k on the k-th host in rank order, then by load.
  auto load_of = [&load](const PsRecord* server) {
    auto it = load.find(server->id);
    return it == load.end() ? 0 : it->second;
  };
  std::stable_sort(
      live.begin(), live.end(), [&](const PsRecord* a, const PsRecord* b) {
        return std::make_tuple(host_order(a), load_of(a), a->number) <
               std::make_tuple(host_order(b), load_of(b), b->number);
      });
  const int count = job.spec().ps().shards() > 0
                        ? job.spec().ps().shards()
                        : static_cast<int>(live.size());
  std::vector<ShardPlacement> shards;
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
