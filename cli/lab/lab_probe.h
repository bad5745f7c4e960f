// `gradsync lab probe`: measures the emulated links before anyone trusts
// them. For each probed host pair it streams TCP from one host's namespace
// to the other's for a while and measures the receiver's goodput after a
// warm-up, and it times small round trips on a second connection
// (TCP_NODELAY). Then every pair of the ring of hosts sends at once, which
// shows whether this machine can carry all the links at their rate at the
// same time, or whether its CPUs would become the limit.
//
// A pair passes when its goodput is within `tolerance` of what the link
// allows: the rate times the TCP payload share of each frame (MSS over MTU
// plus the 14-byte Ethernet header: 1448/1514 with timestamps). Lab results
// count only where the probe passed (docs/lab.md).
//
// Pairs: kRing probes h0 -> h1 -> ... -> h0 (every host's uplink and
// downlink once); kAll every ordered pair of distinct hosts.
//
// Everything runs in this process: each probing thread enters its host's
// network namespace (setns), so no helper program is needed.
//
// Errors: FAILED_PRECONDITION without privileges or a namespace; INTERNAL
// naming the pair whose socket failed; DEADLINE_EXCEEDED naming the pair
// that stalled.
#ifndef GRADSYNC_CLI_LAB_LAB_PROBE_H_
#define GRADSYNC_CLI_LAB_LAB_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/lab/lab_config.h"
#include "proto/lab.pb.h"

namespace gradsync {
namespace lab {

enum class ProbePairs { kRing, kAll };

struct ProbeOptions {
  ProbePairs pairs = ProbePairs::kRing;
  absl::Duration duration = absl::Milliseconds(600);  // per stream
  absl::Duration warmup = absl::Milliseconds(150);    // not counted
  int round_trips = 20;
  double tolerance = 0.10;
  bool concurrent = true;  // the all-at-once round
};

// The pairs to probe, as indices into `hosts`.
std::vector<std::pair<int, int>> ProbePairList(int hosts, ProbePairs pairs);

// What a frame of `mss` payload bytes allows of `rate_bps` on links of
// `mtu`: rate * mss / (mtu + 14).
double ExpectedGoodput(double rate_bps, int mss, int mtu);

// The lab's veths: MTU 1500, so TCP with timestamps carries 1448 bytes a
// frame. For figures made without a probe (the coordinator's link facts,
// explain before a sweep).
constexpr int kLabMtu = 1500;
constexpr int kLabMss = 1448;

// What the lab's links of `rate_bps` carry of TCP payload, bytes/s
// (ExpectedGoodput of full frames).
double LabPayloadBytesPerSecond(double rate_bps);

// Two lines for people: the pairs' goodput range against the expected, the
// round trips, and the all-at-once round with the CPUs' share.
std::string FormatProbeSummary(const ProbeReport& probe);

[[nodiscard]] absl::StatusOr<ProbeReport> ProbeLab(const LabConfig& config,
                                                   const ProbeOptions& options);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_PROBE_H_
