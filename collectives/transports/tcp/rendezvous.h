// Rendezvous of the TCP backend: every rank listens, publishes its address
// under "tcp/addr/<rank>" in the Store, connects to every lower rank and
// accepts every higher one. Each connection starts with a Handshake that the
// accepting rank checks (job id, ranks, world size) and answers; connections
// that fail the check (strays, another job, garbage) are answered, closed
// and remembered for the error message, and rendezvous goes on.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_RENDEZVOUS_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_RENDEZVOUS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "collectives/store.h"
#include "collectives/transports/tcp/socket.h"
#include "collectives/transports/tcp/tcp_options.h"

namespace gradsync {

// Returns one configured socket per peer, indexed by rank (the entry of
// `rank` itself is empty). Errors: DEADLINE_EXCEEDED naming the ranks that
// never connected (and any rejected strays); FAILED_PRECONDITION when a
// peer refused our handshake, naming it and the reason.
[[nodiscard]] absl::StatusOr<std::vector<Socket>> ConnectAllPeers(
    Store* store, int rank, int size, const TcpOptions& options);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_RENDEZVOUS_H_
