// Pair: the transport under the CPU collectives, one per peer of a rank
// (after gloo/transport/pair.h). The ring and halving-doubling algorithms
// (collectives/algorithms/ring.h, halving_doubling.h) see only this interface,
// so they do not know whether a step crosses a TCP connection
// (collectives/transports/tcp/connection.h) or a shared-memory channel to a
// rank on the same host (collectives/transports/shm/shm_pair.h).
//
// A pair is an ordered, reliable byte stream in each direction. Sends are
// asynchronous and identified by increasing tickets: the caller keeps the
// bytes alive until WaitSent(ticket) returns. Receives run on the calling
// thread.
//
// Errors name the peer rank: DEADLINE_EXCEEDED (a deadline passed),
// UNAVAILABLE (the peer closed, died or shut its end), ABORTED (the
// communicator's abort flag), INTERNAL (system errors). A failed pair stays
// failed.
//
// Threading: Send/WaitSent/LastTicket/Recv are called by one thread at a
// time (the collective's); PeerClosed and Shutdown from any thread.
#ifndef GRADSYNC_COLLECTIVES_PAIR_H_
#define GRADSYNC_COLLECTIVES_PAIR_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {

class Pair {
 public:
  virtual ~Pair() = default;

  // The peer's rank.
  virtual int peer() const = 0;
  // "tcp" or "shm", for logs and tests.
  virtual absl::string_view transport() const = 0;

  // Queues `len` bytes at `data` after everything queued before; returns
  // the ticket to wait on. `deadline` bounds the send itself.
  virtual uint64_t Send(const void* data, size_t len, absl::Time deadline) = 0;
  // Blocks until the send with `ticket` (and all before it) left, the pair
  // failed, or `deadline` passed.
  [[nodiscard]] virtual absl::Status WaitSent(uint64_t ticket,
                                              absl::Time deadline) = 0;
  // Ticket of the last queued send (0 if none): waiting on it drains.
  virtual uint64_t LastTicket() = 0;

  // Receives exactly `len` bytes on the calling thread, first polling up
  // to `spin_polls` times (yielding the core in between) before it blocks.
  [[nodiscard]] virtual absl::Status Recv(void* data, size_t len,
                                          absl::Time deadline,
                                          int spin_polls) = 0;

  // Receives `len` bytes (a multiple of `unit`, 1 to 16 bytes) and hands
  // them to `consume` in order, in pieces of a multiple of `unit` and at
  // most `max_piece` bytes each. A transport that can lends its own memory
  // (shm: the ring itself, which saves a copy per byte); the others receive
  // into `scratch` (at least max_piece bytes). `consume` must not keep the
  // pointer. Errors as Recv.
  [[nodiscard]] virtual absl::Status RecvPieces(
      size_t len, size_t unit, char* scratch, size_t max_piece,
      absl::Time deadline, int spin_polls,
      absl::FunctionRef<void(const char* data, size_t bytes)> consume) = 0;

  // True if the peer has closed its end or died (checked without blocking).
  virtual bool PeerClosed() const = 0;
  // Fails queued sends and wakes blocked calls, here and at the peer.
  virtual void Shutdown() = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_PAIR_H_
