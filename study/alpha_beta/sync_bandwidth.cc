#include "study/alpha_beta/sync_bandwidth.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {

double AllReduceBusFactor(int ranks) {
  if (ranks < 2) return 0.0;
  return 2.0 * (ranks - 1) / ranks;
}

double PsBusFactor(int ranks, int shards) {
  if (shards < 1) return 0.0;
  return 2.0 * std::max(1.0, static_cast<double>(ranks) / shards);
}

double AlgorithmBandwidth(int64_t bytes, absl::Duration busy) {
  const double seconds = absl::ToDoubleSeconds(busy);
  if (seconds <= 0.0) return 0.0;
  return static_cast<double>(bytes) / seconds / 1e9;
}

absl::Duration BusyTime(std::vector<TimeInterval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const TimeInterval& a, const TimeInterval& b) {
              return a.begin < b.begin;
            });
  absl::Duration busy = absl::ZeroDuration();
  bool open = false;
  TimeInterval run;
  for (const TimeInterval& i : intervals) {
    if (!(i.begin < i.end)) continue;
    if (open && i.begin <= run.end) {
      run.end = std::max(run.end, i.end);
      continue;
    }
    if (open) busy += run.end - run.begin;
    run = i;
    open = true;
  }
  if (open) busy += run.end - run.begin;
  return busy;
}

absl::StatusOr<double> IdealBusBandwidth(const ClusterLinks& links) {
  if (!(links.link_gbps > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the link bandwidth B must be positive (GB/s), not ", links.link_gbps));
  }
  if (links.ranks_per_node < 1 || links.nodes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a cluster needs at least one node and one rank per "
                     "node, not ",
                     links.nodes, " nodes of ", links.ranks_per_node));
  }
  int ranks = links.ranks_per_node * links.nodes;
  if (!links.node_ranks.empty()) {
    const int most =
        *std::max_element(links.node_ranks.begin(), links.node_ranks.end());
    const int fewest =
        *std::min_element(links.node_ranks.begin(), links.node_ranks.end());
    if (static_cast<int>(links.node_ranks.size()) != links.nodes ||
        most != links.ranks_per_node || fewest < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("node_ranks {", absl::StrJoin(links.node_ranks, ", "),
                       "} must hold one count >= 1 per node (", links.nodes,
                       ") with the largest equal to ranks_per_node (",
                       links.ranks_per_node, ")"));
    }
    ranks = 0;
    for (int r : links.node_ranks) ranks += r;
  }
  if (links.nodes == 1) return links.link_gbps;
  if (!(links.node_link_gbps > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "on ", links.nodes,
        " nodes the node link bandwidth I must be positive (GB/s), not ",
        links.node_link_gbps));
  }
  const double q = links.nodes;
  const double p = links.ranks_per_node;
  const double n = ranks;
  double ideal = links.node_link_gbps * (n - 1) * q / (n * (q - 1));
  if (links.ranks_per_node > 1) {
    ideal = std::min(ideal, links.link_gbps * p * (n - 1) / (n * (p - 1)));
  }
  return ideal;
}

}  // namespace gradsync
