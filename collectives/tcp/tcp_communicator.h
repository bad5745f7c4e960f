// TCP backend of Communicator, for CPU hosts: ranks are connected by
// persistent TCP connections found through a Store (the TCP transport,
// collectives/transports/tcp/), and collectives run the bandwidth-optimal
// ring (pipelined in segments) or, for small messages, the latency-optimal
// recursive halving-doubling algorithm (collectives/algorithms/). This
// backend is where the two meet, so it sits above both, beside nccl/.
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
// Pairs of ranks on one host then move their bytes through shared memory
// instead, unless TcpOptions::transport says tcp
// (collectives/transports/tcp/shm_upgrade.h); the algorithms and their
// checks are the same on either transport.
//
// Threading: the returned communicator is thread-safe; collectives run in
// issue order on a progress thread (or inline for synchronous calls when
// nothing is queued). Each connection has one sender thread.
#ifndef GRADSYNC_COLLECTIVES_TCP_TCP_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_TCP_TCP_COMMUNICATOR_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "collectives/communicator.h"
#include "collectives/store.h"
#include "collectives/transports/tcp/tcp_options.h"  // TcpOptions
#include "common/tcp_congestion.h"                   // CheckCongestionControl

namespace gradsync {

// Open MPI's rule for oversubscribed hosts (its yield_when_idle): with
// more ranks on a host than cores, a waiting rank gives up its core at
// once instead of spinning, because the core it spins on is one that a
// rank everybody waits for needs (for its backward or its send). Returns
// `spin_polls`, or 0 when ranks_on_host > cores; counts <= 0 (unknown)
// keep `spin_polls`. Measured on 2 cores, 4 ranks training the demo's
// model: ring steps of 5.6-5.9 ms without spinning, 6.8-8.7 ms with
// 10000 polls (docs/collectives.md).
int SpinPollsForHost(int spin_polls, int ranks_on_host, int cores);

// Connects rank `rank` of `size` to its peers through `store` and returns
// the communicator. Blocks until every peer is connected or
// options.connect_timeout passes (DEADLINE_EXCEEDED naming the ranks that
// never showed up). `store` is used only during this call.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>>
CreateTcpCommunicator(Store* store, int rank, int size,
                      const TcpOptions& options);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TCP_TCP_COMMUNICATOR_H_
