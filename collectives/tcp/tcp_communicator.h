// TCP backend of Communicator, for CPU hosts: ranks are connected by
// persistent TCP connections found through a Store, and collectives run the
// bandwidth-optimal ring (pipelined in segments) or, for small messages, the
// latency-optimal recursive halving-doubling algorithm.
//
//   MemoryStore store;  // or a gRPC store client for processes
//   TcpOptions options;
//   options.job_id = "job-7/gen-0";
//   ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm,
//                    CreateTcpCommunicator(&store, rank, size, options));
//   RETURN_IF_ERROR(comm->AllReduce(buf, buf, n, DataType::kFloat32,
//                                   ReduceOp::kSum));
//
// Rendezvous publishes "tcp/addr/<rank>" in the store; the caller namespaces
// the store (PrefixStore) per job and generation. Every connection begins
// with a handshake carrying job_id and both ranks, and every collective with
// a header (sequence number, op, type, count), so stray connections, garbage
// bytes and mismatched calls fail fast with an error naming the ranks.
//
// Threading: the returned communicator is thread-safe; collectives run in
// issue order on a progress thread (or inline for synchronous calls when
// nothing is queued). Each connection has one sender thread.
#ifndef GRADSYNC_COLLECTIVES_TCP_TCP_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_TCP_TCP_COMMUNICATOR_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "collectives/store.h"

namespace gradsync {

enum class AllReduceAlgorithm {
  kAuto,             // halving-doubling below the threshold, ring above
  kRing,             // bandwidth-optimal: 2(N-1) steps, 2(N-1)/N * S bytes
  kHalvingDoubling,  // latency-optimal: 2 log2(N) steps (Rabenseifner)
};
absl::StatusOr<AllReduceAlgorithm> ParseAllReduceAlgorithm(
    absl::string_view name);
absl::string_view AllReduceAlgorithmName(AllReduceAlgorithm algo);

struct TcpOptions {
  // Identifies the job and rendezvous generation; peers with another id are
  // refused at the handshake.
  std::string job_id = "default";
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
  // Kernel socket buffers (SO_SNDBUF / SO_RCVBUF) while large collectives
  // run; 0 keeps the default. Small buffers keep the ring's data in flight
  // few and cache-warm.
  int socket_buffer_bytes = 256 << 10;
  // Socket buffers while collectives of at most spin_max_bytes run (0: use
  // socket_buffer_bytes for every size). Large enough that a small
  // collective's sends fit in the kernel whole and never wait for the
  // sender thread: on a 2-core host this doubles busbw at 1 MiB, and costs
  // a tenth at 64 MiB, hence two sizes. Connections are set up with the
  // larger one (the TCP window is sized then) and switched when the size
  // class of the next collective differs from the last one's.
  int small_socket_buffer_bytes = 4 << 20;
  // Collectives of at most spin_max_bytes are latency-bound: their receives
  // poll up to spin_polls times (yielding the core in between) before they
  // block, which saves a sleep and a wake-up per step. Larger collectives
  // never spin: there the cores are better spent copying and reducing.
  int spin_polls = 10000;
  size_t spin_max_bytes = 2 << 20;
};

// The socket buffer size for a collective of `message_bytes` under
// `options` (0: the kernel's default), and the size connections start with.
// Two sizes are used only when socket_buffer_bytes and
// small_socket_buffer_bytes are both set.
int SocketBufferBytesFor(const TcpOptions& options, size_t message_bytes);
int InitialSocketBufferBytes(const TcpOptions& options);

// Connects rank `rank` of `size` to its peers through `store` and returns
// the communicator. Blocks until every peer is connected or
// options.connect_timeout passes (DEADLINE_EXCEEDED naming the ranks that
// never showed up). `store` is used only during this call.
absl::StatusOr<std::unique_ptr<Communicator>> CreateTcpCommunicator(
    Store* store, int rank, int size, const TcpOptions& options);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TCP_TCP_COMMUNICATOR_H_
