// Link facts from measured links: what `gradsync links probe` turns a
// link-probe job's measurements into (the coordinator's ClusterLinkFacts,
// which `explain` and `--mode auto` model a cluster with), and how each
// link compares with what the operator expects.
//
// The alpha-beta model (study/alpha_beta/sync_model.h) sees one link per host:
// B, the payload each host's link carries per second, and alpha, the latency of
// one message. From N measured links:
//   B      the median goodput (a single slow link is reported, not
//          averaged in: the ring runs at its slowest link, so a link far
//          below the median is named as the thing to fix)
//   alpha  half the median of the links' median round trips
// A link is "below" when its goodput is under (1 - tolerance) of the
// expected payload rate, or, with no expectation, of the median.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_LINK_FACTS_H_
#define GRADSYNC_STUDY_LINK_FACTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {
namespace study {

// One measured link, from one host to another.
struct HostLink {
  std::string from;  // "host (rank 0)"
  std::string to;
  double goodput_Bps = 0;
  double rtt_median_us = 0;
  double rtt_min_us = 0;
};

struct LinkEstimate {
  double bandwidth_Bps = 0;  // B: the median goodput
  double alpha_s = 0;        // half the median round trip
  double slowest_Bps = 0;
  double fastest_Bps = 0;
  int slowest = -1;  // index into the links
  // The payload rate the links were held against: the expectation, or the
  // median when none was given.
  double reference_Bps = 0;
  bool expected = false;   // reference_Bps is the operator's
  std::vector<int> below;  // links under (1 - tolerance) of it
};

// INVALID_ARGUMENT without links, with a figure that is not finite and
// positive (goodput, round trip), or a tolerance outside [0, 1).
// `expected_Bps` 0: none.
[[nodiscard]] absl::StatusOr<LinkEstimate> EstimateLinks(
    const std::vector<HostLink>& links, double expected_Bps, double tolerance);

// What a link of `line_rate_bps` bits/s carries of TCP payload with
// frames of `mtu` bytes: rate/8 * (mtu - 52) / (mtu + 14) (IPv4 and TCP
// headers with timestamps inside the MTU, the 14-byte Ethernet header
// outside it).
double TcpPayloadBytesPerSecond(double line_rate_bps, int mtu);

// The table people read: each link's goodput against the reference, its
// round trips, and the facts with the slowest link named.
std::string FormatLinkEstimate(const std::vector<HostLink>& links,
                               const LinkEstimate& estimate);

}  // namespace study
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_LINK_FACTS_H_
