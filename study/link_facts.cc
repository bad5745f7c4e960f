#include "study/link_facts.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/median.h"

namespace gradsync {
namespace study {
namespace {

constexpr int kTcpIpHeaders = 52;  // IPv4 20, TCP 20, timestamps 12
constexpr int kEthernetHeader = 14;

bool PositiveFinite(double x) { return std::isfinite(x) && x > 0; }

// "11.9 MB/s" below a GB/s, "1.17 GB/s" from there on.
std::string Rate(double Bps) {
  return Bps < 1e9 ? absl::StrFormat("%.1f MB/s", Bps / 1e6)
                   : absl::StrFormat("%.2f GB/s", Bps / 1e9);
}

}  // namespace

double TcpPayloadBytesPerSecond(double line_rate_bps, int mtu) {
  if (mtu <= kTcpIpHeaders) return line_rate_bps / 8;
  return line_rate_bps / 8 * (mtu - kTcpIpHeaders) / (mtu + kEthernetHeader);
}

absl::StatusOr<LinkEstimate> EstimateLinks(const std::vector<HostLink>& links,
                                           double expected_Bps,
                                           double tolerance) {
  if (links.empty()) {
    return absl::InvalidArgumentError("no measured links to estimate from");
  }
  if (!(tolerance >= 0 && tolerance < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a tolerance of ", tolerance, "; give a share in [0, 1), e.g. 0.15"));
  }
  if (!std::isfinite(expected_Bps) || expected_Bps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("an expected rate of ", expected_Bps, " bytes/s"));
  }
  std::vector<double> goodputs, rtts;
  for (const HostLink& link : links) {
    if (!PositiveFinite(link.goodput_Bps) ||
        !PositiveFinite(link.rtt_median_us)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the link %s -> %s measured %g bytes/s and a round trip of %g us; "
          "both must be finite and > 0 (was the stream too short to time? "
          "probe with more bytes)",
          link.from, link.to, link.goodput_Bps, link.rtt_median_us));
    }
    goodputs.push_back(link.goodput_Bps);
    rtts.push_back(link.rtt_median_us);
  }
  LinkEstimate e;
  e.bandwidth_Bps = Median(goodputs);
  e.alpha_s = Median(rtts) / 2 * 1e-6;
  const auto [lo, hi] = std::minmax_element(goodputs.begin(), goodputs.end());
  e.slowest = static_cast<int>(lo - goodputs.begin());
  e.slowest_Bps = *lo;
  e.fastest_Bps = *hi;
  e.expected = expected_Bps > 0;
  e.reference_Bps = e.expected ? expected_Bps : e.bandwidth_Bps;
  for (size_t i = 0; i < links.size(); ++i) {
    if (links[i].goodput_Bps < (1 - tolerance) * e.reference_Bps) {
      e.below.push_back(static_cast<int>(i));
    }
  }
  return e;
}

std::string FormatLinkEstimate(const std::vector<HostLink>& links,
                               const LinkEstimate& e) {
  size_t width = 4;
  for (const HostLink& link : links) {
    width = std::max(width, link.from.size() + link.to.size() + 4);
  }
  std::string out = absl::StrFormat(
      "%-*s  %11s  %9s  %9s  %9s\n", static_cast<int>(width), "LINK", "GOODPUT",
      e.expected ? "EXPECTED" : "OF MEDIAN", "RTT", "RTT MIN");
  for (size_t i = 0; i < links.size(); ++i) {
    const HostLink& link = links[i];
    const bool below = std::find(e.below.begin(), e.below.end(),
                                 static_cast<int>(i)) != e.below.end();
    absl::StrAppendFormat(
        &out, "%-*s  %11s  %8.0f%%  %6.0f us  %6.0f us%s\n",
        static_cast<int>(width), absl::StrCat(link.from, " -> ", link.to),
        Rate(link.goodput_Bps), 100 * link.goodput_Bps / e.reference_Bps,
        link.rtt_median_us, link.rtt_min_us, below ? "  BELOW" : "");
  }
  absl::StrAppendFormat(
      &out,
      "\nB = %s (median of %d links; %s to %s), alpha = %.1f us "
      "(half the median round trip)\n",
      Rate(e.bandwidth_Bps), static_cast<int>(links.size()),
      Rate(e.slowest_Bps), Rate(e.fastest_Bps), e.alpha_s * 1e6);
  if (e.below.empty()) {
    absl::StrAppendFormat(
        &out, "every link within tolerance of %s\n",
        e.expected ? absl::StrCat("the expected ", Rate(e.reference_Bps))
                   : std::string("the median"));
  } else {
    const HostLink& slow = links[e.slowest];
    absl::StrAppendFormat(
        &out,
        "%d link(s) below %s; the slowest, %s -> %s, carries %.0f%% of it. "
        "A ring runs at its slowest link: check that link's NIC, cable and "
        "switch port, or whether other traffic shares it\n",
        static_cast<int>(e.below.size()),
        e.expected ? absl::StrCat("the expected ", Rate(e.reference_Bps))
                   : std::string("the median"),
        slow.from, slow.to, 100 * e.slowest_Bps / e.reference_Bps);
  }
  return out;
}

}  // namespace study
}  // namespace gradsync
