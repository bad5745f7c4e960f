// The last step of the CPU communicator's rendezvous: chooses a transport
// for each peer and builds its Pair (collectives/pair.h).
//
// Over every authenticated TCP connection (rendezvous.h: job id, ranks,
// the job secret proof) both ranks send a ShmHello: whether they allow
// shared memory (TcpOptions::transport) and their host identity
// (TcpOptions::host_id, or LocalHostIdentity() of
// collectives/host_identity.h). A pair where both allow it and
// the identities are equal is upgraded: the lower rank creates a segment
// (collectives/transports/shm/shm_segment.h) and sends its name and token over
// the connection, the higher rank maps it and acknowledges, and the lower rank
// unlinks the name. Every other pair keeps its TCP Connection.
//
// The exchange runs in phases (all hellos, all offers, all acks), each
// sending only small messages that fit in the socket buffers, so no two
// ranks wait on each other in a cycle.
//
// With Transport::kAuto a segment that cannot be created or opened falls
// back to TCP; with kShm it, or a peer on another host, is an error.
// Errors: FAILED_PRECONDITION naming the peer (kShm and no shared memory
// possible); DEADLINE_EXCEEDED / UNAVAILABLE naming the peer when it does
// not answer within options.connect_timeout or closes the connection.
// Threading: called once, by the rendezvous thread.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_SHM_UPGRADE_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_SHM_UPGRADE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collectives/pair.h"
#include "collectives/transports/tcp/socket.h"
#include "collectives/transports/tcp/tcp_options.h"

namespace gradsync {

// Builds one Pair per peer from the connected sockets (indexed by rank;
// the entry of `rank` stays null). `aborted` is the communicator's abort
// flag (must outlive the pairs).
[[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<Pair>>> MakePairs(
    std::vector<Socket> sockets, int rank, const TcpOptions& options,
    const std::atomic<bool>* aborted);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_SHM_UPGRADE_H_
