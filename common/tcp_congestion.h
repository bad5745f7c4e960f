// TCP congestion control (TCP_CONGESTION) of the job's connections, one
// policy for both data paths: the TCP ring's sockets
// (collectives/transports/tcp/rendezvous.cc) and the parameter server's gRPC
// connections (server/ps/transport/ps_socket_mutator.h).
//
// Policies, as `--tcp-congestion` takes them:
//   "auto"            reno on connections between processes of one host,
//                     the system's default on all others. Loopback has no
//                     queue for congestion control to protect, but a pacing
//                     algorithm (BBR, the default on many hosts) paces
//                     there too: hrtimer wake-ups and smaller packets
//                     (docs/collectives.md,
//                     docs/performance/ps-transport.md). Best effort: if the
//                     kernel refuses reno, the default stays.
//   "default" or ""   the system's default everywhere.
//   NAME              that algorithm on every connection; refused up front
//                     (CheckCongestionControl) if the kernel will not set it.
//
// Thread-safe: these are functions of their arguments and the kernel.
#ifndef GRADSYNC_COMMON_TCP_CONGESTION_H_
#define GRADSYNC_COMMON_TCP_CONGESTION_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {

// Longest TCP congestion control name the kernel knows (TCP_CA_NAME_MAX
// less the terminating NUL); it truncates longer ones silently.
inline constexpr size_t kMaxCongestionControlName = 15;

// The algorithm `policy` puts on a connection whose peer is, or is not, on
// this host; "" to keep the system's default.
std::string CongestionControlFor(const std::string& policy, bool peer_is_local);

// OK for "auto", "default" and ""; for any other name, whether the kernel
// lets this process use it, probed on a fresh socket: INVALID_ARGUMENT if
// longer than a kernel algorithm name, FAILED_PRECONDITION if refused.
// Daemons call it at start to refuse a bad flag early.
[[nodiscard]] absl::Status CheckCongestionControl(const std::string& name);

// Sets TCP_CONGESTION on socket `fd`. INVALID_ARGUMENT for a name longer
// than kMaxCongestionControlName; FAILED_PRECONDITION if the kernel
// refuses it (not built, or not in net.ipv4.tcp_allowed_congestion_control
// for this process).
[[nodiscard]] absl::Status SetTcpCongestionControl(int fd,
                                                   const std::string& name);

// The algorithm in use on `fd` ("bbr", "cubic", ...).
[[nodiscard]] absl::StatusOr<std::string> GetTcpCongestionControl(int fd);

// True when the peer of connected TCP socket `fd` (IPv4, IPv6 or
// IPv4-mapped IPv6) is on this host: its address is a loopback address or
// the socket's own local address.
bool TcpPeerIsLocal(int fd);

// True once the peer of connected socket `fd` has closed it or shut its
// sending side (or the socket failed): polled, never blocks. The TCP and
// shared-memory pairs and the PS tensor plane use it to tell a dead peer.
bool TcpPeerClosed(int fd);

// True when `host` (of a "host:port" address, IPv6 with or without
// brackets) names this host without a lookup: "localhost", a loopback
// address, an address of one of this host's interfaces, or this host's
// name (gethostname). Other names are taken as remote: no DNS lookup here.
bool HostIsLocal(const std::string& host);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_TCP_CONGESTION_H_
