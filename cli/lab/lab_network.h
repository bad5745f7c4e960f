// The lab's network: the `ip` and `tc` commands that build, shape and tear
// down the emulated hosts of lab_config.h, and a runner for them.
//
// The commands are plain data (NetworkUpCommands, ShapeCommands,
// NetworkDownCommands), so the plan is unit-tested without privileges;
// RunCommands executes them with iproute2's binaries, each with a
// deadline.
//
// Shaping, per host and direction: a token bucket (tbf) at the link rate,
// with a burst of max(128 KiB, 1 ms at the rate) (so that one GSO packet of
// 64 KiB always fits). The queues:
//   host egress   32 MiB (or the --queue time, if longer): a host's own NIC
//                 queue never drops what TCP Small Queues let a socket put
//                 there (net.ipv4.tcp_limit_output_bytes, 4 MiB a socket),
//                 as a real NIC's does not; a short tbf queue there would
//                 drop a worker's pushes to several servers at once, an
//                 artefact of the emulation;
//   host ingress  the switch port's buffer, --queue at the link rate (50 ms
//                 by default: a deep-buffered switch, so that incast from N
//                 workers into one server queues instead of dropping; a
//                 short --queue studies incast loss).
// With a latency, a netem root qdisc adds the delay and the tbf hangs
// below it.
//
// Cleanup never depends on the state file: every name starts with the
// lab's prefix, so LabLeftovers finds namespaces and interfaces of a lab
// whose `up` crashed, and deleting a namespace removes its veth pair and
// its qdiscs with it.
//
// Errors: FAILED_PRECONDITION with one sentence saying what is missing when
// the lab cannot run here (CheckLabPrivileges); INTERNAL naming the command
// and quoting its stderr when one fails; DEADLINE_EXCEEDED when one hangs.
#ifndef GRADSYNC_CLI_LAB_LAB_NETWORK_H_
#define GRADSYNC_CLI_LAB_LAB_NETWORK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/lab/lab_config.h"

namespace gradsync {
namespace lab {

struct NetCommand {
  std::vector<std::string> argv;  // argv[0] is "ip" or "tc"
  // Teardown: a failure (the thing is already gone) is not an error.
  bool may_fail = false;
};

// The bridge, then per host: namespace, veth pair (moved in and renamed
// eth0), addresses, links up, a default route via the bridge; then the
// shaping (ShapeCommands).
std::vector<NetCommand> NetworkUpCommands(const LabConfig& config,
                                          const std::vector<LabHost>& hosts);

// `tc qdisc replace` on both ends of every host's link: applying them
// again with other settings changes the links in place (`lab set-link`).
std::vector<NetCommand> ShapeCommands(const LinkSettings& link,
                                      const std::vector<LabHost>& hosts);

// Deletes the namespaces `netns` (their veths and qdiscs go with them),
// any interface left in `links`, and the bridge; every one may fail.
std::vector<NetCommand> NetworkDownCommands(
    absl::string_view prefix, const std::vector<std::string>& netns,
    const std::vector<std::string>& links);

// "ip -n gsl-w1 addr add ..." for messages.
std::string CommandText(const NetCommand& command);

// Runs the commands in order, each within `timeout`; stops at the first
// failure that is not may_fail (INTERNAL: the command and its stderr).
[[nodiscard]] absl::Status RunCommands(const std::vector<NetCommand>& commands,
                                       absl::Duration timeout);

// OK where the lab can run: CAP_NET_ADMIN (root), `ip` and `tc` found.
// FAILED_PRECONDITION otherwise, in one sentence that says what is needed.
[[nodiscard]] absl::Status CheckLabPrivileges();

// Whether this kernel has the netem qdisc (--latency needs it): tries it
// on a scratch namespace's loopback. FAILED_PRECONDITION saying so if not.
[[nodiscard]] absl::Status CheckNetem(absl::string_view prefix,
                                      absl::Duration timeout);

// What a lab of `prefix` left on this machine: its namespaces (from
// /run/netns) and root-namespace interfaces (from /sys/class/net).
struct Leftovers {
  std::vector<std::string> netns;
  std::vector<std::string> links;
  bool empty() const { return netns.empty() && links.empty(); }
};
Leftovers LabLeftovers(absl::string_view prefix);

// Pids of the processes whose network namespace is `netns` (what `ip netns
// pids` lists), for a teardown that has no state file to go by.
std::vector<int> PidsInNamespace(absl::string_view netns);

// The path of a named namespace: /run/netns/<name>.
std::string NamespacePath(absl::string_view netns);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_NETWORK_H_
