// The bottleneck lab's layout: which emulated hosts `gradsync lab up`
// builds, what they are called, their addresses and links. Pure data and
// functions, so that the whole layout is testable without privileges.
//
// Hosts are network namespaces on one bridge (docs/lab.md):
//
//   head      the coordinator (a host of its own, so that control traffic
//             never shares a worker's or a server's link)
//   w1..wH    worker hosts (--hosts H), W worker daemons each
//   s1..sP    parameter-server hosts (--ps-hosts P), one gradsync-ps each
//
// With --colocate-ps every worker host also runs one gradsync-ps (BytePS's
// layout); a job chooses separate or colocated servers with
// `--ps-placement`.
//
// Names: namespace "<prefix>-<host>" (e.g. "gsl-w1"), its veth pair
// "<prefix>-<host>" in the root namespace (on the bridge) and "eth0"
// inside, the bridge "<prefix>-br". Addresses: <subnet>.1 for the head,
// then the worker hosts, then the server hosts; the bridge (the root
// namespace's way in, for the CLI) is <subnet>.254.
//
// Links: every host's veth is shaped in both directions (the host's
// egress inside the namespace, its ingress on the bridge side) to the same
// rate, a full-duplex NIC of that speed. --latency D adds D of one-way
// delay between any two hosts (D/2 on each host's link each way; needs the
// kernel's netem qdisc). --queue Q sizes the switch port's buffer toward a
// host (the ingress side, where incast queues build): Q at the link rate.
#ifndef GRADSYNC_CLI_LAB_LAB_CONFIG_H_
#define GRADSYNC_CLI_LAB_LAB_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/ps/transport/ps_transport.h"

namespace gradsync {
namespace lab {

inline constexpr absl::string_view kDefaultPrefix = "gsl";
inline constexpr absl::string_view kDefaultSubnet = "10.77.0";
inline constexpr absl::string_view kLabStateFile = "lab.json";
inline constexpr int kCoordinatorPort = 29400;

struct LinkSettings {
  int64_t rate_bps = 1'000'000'000;  // bits per second, each direction
  // One-way delay between two hosts; zero: none (no netem).
  absl::Duration latency = absl::ZeroDuration();
  // The switch port's buffer toward each host, in time at the link rate
  // (lab_network.h).
  absl::Duration queue = absl::Milliseconds(50);
};

struct LabConfig {
  std::string prefix = std::string(kDefaultPrefix);
  std::string subnet = std::string(kDefaultSubnet);  // "A.B.C" of a /24
  int worker_hosts = 2;
  int ps_hosts = 0;
  bool colocate_ps = false;
  int workers_per_host = 1;
  std::string devices_per_worker = "cpu:1";
  LinkSettings link;
  // TCP congestion control of the daemons' connections (their
  // --tcp-congestion) and of the probe: "default" is the machine's
  // (net.ipv4.tcp_congestion_control, which namespaces inherit).
  std::string tcp_congestion = "default";
  // The workers' --ps-transport (server/ps/transport/ps_transport.h): "plane"
  // (the default; every gradsync-ps serves one) or "grpc".
  std::string ps_transport = kDefaultPsTransport;
  // Entrypoint jobs: the coordinator gets a fresh users' token
  // (RUN_DIR/user-token, which the CLI then needs) and every worker
  // --allow-entrypoints.
  bool allow_entrypoints = false;
};

enum class HostRole { kHead, kWorker, kServer };

struct LabHost {
  std::string name;  // "head", "w1", "s1": also its host name
  HostRole role = HostRole::kHead;
  std::string netns;    // "<prefix>-<name>"
  std::string veth;     // root-namespace end, on the bridge
  std::string address;  // "<subnet>.<n>"
  int workers = 0;      // worker daemons on it
  int servers = 0;      // gradsync-ps daemons on it
};

// OK, or INVALID_ARGUMENT naming the bad field: a prefix that is not 1-8
// of [a-z0-9] starting with a letter (interface names must fit 15
// characters), a subnet that is not three octets, no worker host, more
// hosts than a /24 holds, a rate below 1 kbit/s, a negative latency.
[[nodiscard]] absl::Status ValidateLabConfig(const LabConfig& config);

// The hosts of a valid config: the head, the worker hosts, the server
// hosts, in that order.
std::vector<LabHost> LabHosts(const LabConfig& config);

// The bridge's name and address.
std::string BridgeName(absl::string_view prefix);
std::string BridgeAddress(absl::string_view subnet);

// A link rate as tc writes it: "<number>[k|m|g]bit" (powers of 1000), or
// the shorthand "<number>[k|m|g]" ("1g", "500m"), in bits per second.
// INVALID_ARGUMENT for anything else or below 1 kbit/s.
[[nodiscard]] absl::StatusOr<int64_t> ParseLinkRate(absl::string_view text);
// "1gbit", "500mbit", "1500kbit", "999bit": the shortest exact form.
std::string FormatLinkRate(int64_t rate_bps);
// "1 Gbit/s", "2.5 Gbit/s", "500 Mbit/s": for people.
std::string DescribeLinkRate(int64_t rate_bps);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_CONFIG_H_
