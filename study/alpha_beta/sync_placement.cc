#include "study/alpha_beta/sync_placement.h"

#include <algorithm>

namespace gradsync {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

SyncPlacement SyncPlacementOf(
    const std::vector<std::string>& rank_hosts,
    const std::vector<std::pair<std::string, std::string>>& shard_servers) {
  SyncPlacement placement;
  for (const std::string& host : rank_hosts) {
    if (!Contains(placement.hosts, host)) placement.hosts.push_back(host);
  }
  placement.colocated = !shard_servers.empty();
  for (const auto& [server, host] : shard_servers) {
    if (Contains(placement.servers, server)) continue;
    placement.servers.push_back(server);
    placement.colocated =
        placement.colocated && !host.empty() && Contains(placement.hosts, host);
  }
  return placement;
}

SyncModelInputs SyncModelInputsOf(const SyncPlacement& placement,
                                  int64_t sync_bytes, int64_t partition_bytes) {
  const double bytes = static_cast<double>(sync_bytes);
  const int hosts = static_cast<int>(placement.hosts.size());
  const int servers = static_cast<int>(placement.servers.size());
  SyncModelInputs in;
  in.ring.layout = SyncLayout::kRing;
  in.ring.workers = hosts;
  in.ring.bytes = bytes;
  in.ps.layout =
      placement.colocated ? SyncLayout::kPsColocated : SyncLayout::kPsSeparate;
  in.ps.workers = hosts;
  in.ps.shards =
      std::max(1, placement.colocated ? std::min(servers, hosts) : servers);
  in.ps.bytes = bytes;
  in.ps.pipelined = true;
  in.ps.partition_bytes = static_cast<double>(partition_bytes);
  return in;
}

}  // namespace gradsync
