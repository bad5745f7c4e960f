// The listening sockets of a gRPC port that gradsync accepts itself
// (security/grpc_listener.h), bound as gRPC 1.51 binds "host:port": a wildcard
// host (0.0.0.0, ::) as one dual-stack [::] socket when the machine has
// IPv6 (else 0.0.0.0), a name as every address it resolves to, on one
// port (port 0: the first bind picks it). SO_REUSEADDR, so that a
// restarted daemon rebinds through TIME_WAIT, but not SO_REUSEPORT, which
// would let two daemons share the port and split their clients.
//
//   ASSIGN_OR_RETURN(ListenSockets sockets, BindListenSockets("0.0.0.0", 0));
//   ... accept4(sockets.fds[0].get(), ...) ...
//
// Errors: UNAVAILABLE with the OS's reason ("Address already in use") when
// no address can be bound, or the host does not resolve.
// Thread-safe: functions of the kernel's sockets.
#ifndef GRADSYNC_COMMON_LISTEN_SOCKETS_H_
#define GRADSYNC_COMMON_LISTEN_SOCKETS_H_

#include <sys/socket.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace gradsync {

struct ListenSockets {
  std::vector<UniqueFd> fds;  // non-blocking, listening
  int port = 0;               // the port they share
};

// Binds and listens on `host` (brackets of "[v6]" already stripped) and
// `port` (0: any free one).
[[nodiscard]] absl::StatusOr<ListenSockets> BindListenSockets(
    const std::string& host, int port);

// A peer's address as "10.0.0.5:41234" or "[fd00::5]:41234" (an IPv4
// address mapped into IPv6 as IPv4), and its host alone ("10.0.0.5").
std::string SocketAddressString(const sockaddr_storage& address);
std::string SocketAddressHost(const sockaddr_storage& address);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_LISTEN_SOCKETS_H_
