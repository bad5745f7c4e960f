// The options of the TCP backend (collectives/tcp/tcp_communicator.h), and
// the choice of transport under it. They live with the TCP transport,
// which reads most of them (rendezvous.h, shm_upgrade.h); the algorithm
// fields are passed up to the algorithms by the communicator.
//
// Errors: ParseTransport's INVALID_ARGUMENT. Plain data and pure
// functions; thread-safe.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_TCP_OPTIONS_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_TCP_OPTIONS_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collectives/all_reduce_algorithm.h"  // AllReduceAlgorithm

namespace gradsync {

// What carries the bytes between two ranks (collectives/pair.h).
enum class Transport {
  kAuto,  // shared memory to ranks on this host, TCP to the others
  kTcp,   // TCP everywhere
  kShm,   // shared memory to every peer; rendezvous fails if one cannot
};
// "auto", "tcp" or "shm"; INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<Transport> ParseTransport(absl::string_view name);
absl::string_view TransportName(Transport transport);

struct TcpOptions {
  // Identifies the job and rendezvous generation; peers with another id are
  // refused at the handshake.
  std::string job_id = "default";
  // The job's secret (Assignment.job_secret): peers prove it to each other
  // at the handshake (collectives/transports/tcp/wire.h), so that a connection
  // from or to anything else is refused and named. Empty: no proof (benches,
  // tests); a rank with a secret refuses a peer without one.
  std::string job_secret;
  // Called (on the rendezvous thread) for each connection refused at
  // rendezvous: strays, garbage, another job, or no proof of the secret;
  // "<peer address> <why>". Such connections are also counted in the
  // error if rendezvous times out. May be empty.
  std::function<void(absl::string_view)> on_rejected;
  // Address to listen on and to publish to peers. Port 0 picks a free port.
  std::string listen_host = "127.0.0.1";
  int listen_port = 0;
  // Host published to peers (defaults to listen_host; set it when listening
  // on 0.0.0.0 across hosts).
  std::string advertise_host;
  // Deadline of rendezvous (all connections up) and of each synchronous
  // collective.
  absl::Duration connect_timeout = absl::Seconds(60);
  absl::Duration timeout = absl::Seconds(60);
  // If set, rendezvous gives up with CANCELLED soon after it becomes true
  // (checked every 100 ms while waiting for peers). Must outlive the call.
  const std::atomic<bool>* cancelled = nullptr;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto;
  // kAuto uses halving-doubling for messages up to this many bytes.
  size_t halving_doubling_max_bytes = 2 << 20;
  // Ring pipelining: the sender forwards a segment as soon as it is reduced;
  // segments are received and reduced in sub-blocks that stay in L2.
  size_t segment_bytes = 1 << 20;
  size_t sub_block_bytes = 256 << 10;
  // Kernel socket buffers; 0 keeps the kernel's defaults. Send buffers
  // (SO_SNDBUF) follow the size of each collective: socket_buffer_bytes
  // for large ones, where little data in flight keeps the ring's bytes
  // cache-warm; small_socket_buffer_bytes for collectives of more than
  // socket_buffer_bytes and at most spin_max_bytes, so that each step's
  // sends fit in the kernel whole (on a 2-core host, twice the busbw at
  // 1 MiB). The communicator switches them only when the size class of a
  // collective differs from the last one's. Receive buffers (SO_RCVBUF)
  // are the larger size, set once at connect time. small_socket_buffer_bytes
  // 0: socket_buffer_bytes for everything.
  int socket_buffer_bytes = 256 << 10;
  int small_socket_buffer_bytes = 4 << 20;
  // TCP congestion control of the connections (TCP_CONGESTION).
  // "auto": "reno" on connections between ranks of one host, the system's
  // default on all others. Loopback has no queue for a congestion control
  // to protect, but a pacing one (BBR, the default on many hosts) still
  // paces there: hrtimer wake-ups and smaller packets cost a 2-core host
  // a fifth of its 64 MiB busbw (docs/performance/allreduce.md). If the kernel
  // refuses reno, "auto" keeps the default. "default" (or ""): the
  // system's default everywhere. Any other name: that algorithm on every
  // connection; rendezvous fails with FAILED_PRECONDITION, before it
  // publishes this rank's address, if the kernel refuses it.
  std::string congestion_control = "auto";
  // Collectives of at most spin_max_bytes are latency-bound: their receives
  // poll up to spin_polls times (yielding the core in between) before they
  // block, which saves a sleep and a wake-up per step. Larger collectives
  // never spin: there the cores are better spent copying and reducing.
  int spin_polls = 10000;
  size_t spin_max_bytes = 2 << 20;
  // Same-host transport (collectives/transports/tcp/shm_upgrade.h). Every pair
  // of ranks first connects over TCP as above (job id, secret proof); then the
  // two tell each other their transport choice and host identity, and a pair
  // where both allow shared memory and the identities match moves its data
  // through a shared memory segment instead, keeping the TCP connection idle as
  // a liveness probe.
  Transport transport = Transport::kAuto;
  // This rank's host identity; empty: the kernel's boot id and the host
  // name (LocalHostIdentity(), collectives/host_identity.h). Tests set it to
  // pretend ranks are on different hosts.
  std::string host_id;
  // Bytes of each direction's ring in a shared memory pair.
  size_t shm_ring_bytes = 1 << 20;
  // Called once per peer at rendezvous with the transport chosen ("tcp" or
  // "shm"); may be empty.
  std::function<void(int peer, absl::string_view transport)> on_transport;
};

// The send buffer size for a collective of `message_bytes` under `options`,
// 0 if any size will do (the message fits in either, or the kernel's
// default is kept); and the receive buffer size of every connection.
int SendBufferBytesFor(const TcpOptions& options, size_t message_bytes);
int ReceiveBufferBytes(const TcpOptions& options);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_TCP_OPTIONS_H_
