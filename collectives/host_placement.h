// HostPlacement: which ranks of a job share a host, and how the
// hierarchical all-reduce (collectives/algorithms/hierarchical_communicator.h)
// splits a buffer into slices and gives each slice an owner on every host.
//
// Pure arithmetic over the ranks' host identities, so that every rank
// computes the same placement from the same store contents, and tests can
// check it without sockets.
//
//   HostPlacement p = HostPlacement::FromHostIds({"a", "a", "a", "b"});
//   p.hosts();        // 2: {0, 1, 2} on host 0, {3} on host 1
//   p.slices();       // 3: the largest host's rank count
//   p.OwnedSlices(3); // [0, 3): rank 3 is alone on its host, owns all
//
// Thread-safe (immutable once made).
#ifndef GRADSYNC_COLLECTIVES_HOST_PLACEMENT_H_
#define GRADSYNC_COLLECTIVES_HOST_PLACEMENT_H_

#include <cstddef>
#include <string>
#include <vector>

namespace gradsync {

class HostPlacement {
 public:
  // Hosts are numbered by their lowest rank; ranks on a host are numbered
  // (local rank) in increasing global rank. `host_ids[r]` is rank r's.
  static HostPlacement FromHostIds(const std::vector<std::string>& host_ids);

  int ranks() const { return static_cast<int>(host_of_.size()); }
  int hosts() const { return static_cast<int>(members_.size()); }
  // Global ranks on host h, in increasing order.
  const std::vector<int>& members(int host) const { return members_[host]; }
  int host_of(int rank) const { return host_of_[rank]; }
  int local_rank(int rank) const { return local_rank_[rank]; }
  int largest_host() const { return largest_host_; }

  // Number of slices K: the most ranks on any host. The buffer is cut into
  // K balanced slices, the same on every host.
  int slices() const { return largest_host_; }

  // The slices rank `rank` owns, [first, last): on a host of L ranks,
  // local rank j owns slices [j*K/L, (j+1)*K/L) (integer division), a
  // contiguous run of one or more slices, so its share of the buffer is one
  // contiguous range.
  struct SliceRun {
    int first;
    int last;
  };
  SliceRun OwnedSlices(int rank) const;

  // The global rank that owns slice `slice` on host `host`.
  int SliceOwner(int host, int slice) const;

  // The global ranks, one per host in host order, that all-reduce slice
  // `slice` across hosts.
  std::vector<int> SliceGroup(int slice) const;

 private:
  std::vector<std::vector<int>> members_;
  std::vector<int> host_of_;
  std::vector<int> local_rank_;
  int largest_host_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_HOST_PLACEMENT_H_
