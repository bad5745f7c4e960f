// CollectiveContext: what one running collective needs from the CPU
// communicator (collectives/tcp/tcp_communicator.h): the pairs to its
// peers (TCP or shared memory; see collectives/pair.h), its header and
// deadline, its segment size and the communicator's preallocated scratch
// memory. The algorithms (ring.h, halving_doubling.h) are plain functions
// over it, so they see no transport: this is their side of the boundary.
//
// Used by one thread at a time (the one running the collective).
#ifndef GRADSYNC_COLLECTIVES_ALGORITHMS_COLLECTIVE_CONTEXT_H_
#define GRADSYNC_COLLECTIVES_ALGORITHMS_COLLECTIVE_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/algorithms/collective_header.h"
#include "collectives/pair.h"
#include "collectives/types.h"

namespace gradsync {

struct CollectiveContext {
  int rank = 0;
  int size = 1;
  // Indexed by rank; nullptr for this rank.
  absl::Span<Pair* const> peers;
  // Bytes per pipelined segment (TcpOptions.segment_bytes).
  size_t segment_bytes = 0;
  // This rank's header for the running collective (sent to every peer it
  // talks to; must stay alive until the collective returns).
  CollectiveHeader header{};
  absl::Time deadline;
  // Non-blocking polls before a receive blocks (0 for large collectives).
  int spin_polls = 0;
  // Receive buffer for one sub-block, reduced from while it is in cache.
  char* scratch = nullptr;
  size_t scratch_bytes = 0;
  // Two blocks of memory for reduce-scatter partial sums (see ring.cc); the
  // communicator grows it to the largest block seen and keeps it.
  char* spare = nullptr;

  DataType type() const { return static_cast<DataType>(header.type); }
  ReduceOp op() const { return static_cast<ReduceOp>(header.op); }
  size_t element_size() const { return DataTypeSize(type()); }
  // Elements per pipelined segment (at least 1).
  size_t segment_elements() const;
  int Mod(int r) const { return ((r % size) + size) % size; }

  // Sends this collective's header to every rank in `send_to`, then reads
  // and checks the header of every rank in `recv_from`, so that ranks that
  // disagree fail before any data moves.
  [[nodiscard]] absl::Status ExchangeHeaders(absl::Span<const int> send_to,
                                             absl::Span<const int> recv_from);

  uint64_t Send(int peer, const void* data, size_t bytes);
  [[nodiscard]] absl::Status WaitSent(int peer, uint64_t ticket);
  [[nodiscard]] absl::Status Drain(int peer);
  [[nodiscard]] absl::Status Recv(int peer, void* data, size_t bytes);
  // Receives `count` elements from `peer` in cache-sized sub-blocks (read
  // in place where the transport allows: Pair::RecvPieces) and stores
  // dst[i] = local[i] (op) received[i]. dst may alias local.
  [[nodiscard]] absl::Status RecvReduce(int peer, void* dst, const void* local,
                                        size_t count);
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALGORITHMS_COLLECTIVE_CONTEXT_H_
