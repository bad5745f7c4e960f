#include "collectives/host_placement.h"

#include <algorithm>
#include <map>

namespace gradsync {

HostPlacement HostPlacement::FromHostIds(
    const std::vector<std::string>& host_ids) {
  HostPlacement p;
  std::map<std::string, int> index;  // host id -> host number
  p.host_of_.resize(host_ids.size());
  p.local_rank_.resize(host_ids.size());
  for (int r = 0; r < static_cast<int>(host_ids.size()); ++r) {
    auto [it, added] = index.emplace(host_ids[r], p.hosts());
    if (added) p.members_.emplace_back();
    std::vector<int>& on_host = p.members_[it->second];
    p.host_of_[r] = it->second;
    p.local_rank_[r] = static_cast<int>(on_host.size());
    on_host.push_back(r);
    p.largest_host_ =
        std::max(p.largest_host_, static_cast<int>(on_host.size()));
  }
  return p;
}

HostPlacement::SliceRun HostPlacement::OwnedSlices(int rank) const {
  const int local = static_cast<int>(members_[host_of_[rank]].size());
  const int j = local_rank_[rank];
  return {j * slices() / local, (j + 1) * slices() / local};
}

int HostPlacement::SliceOwner(int host, int slice) const {
  const std::vector<int>& on_host = members_[host];
  const int local = static_cast<int>(on_host.size());
  // The j with j*K/L <= slice < (j+1)*K/L.
  for (int j = 0; j < local; ++j) {
    if (slice < (j + 1) * slices() / local) return on_host[j];
  }
  return on_host.back();
}

std::vector<int> HostPlacement::SliceGroup(int slice) const {
  std::vector<int> group;
  for (int h = 0; h < hosts(); ++h) group.push_back(SliceOwner(h, slice));
  return group;
}

}  // namespace gradsync
