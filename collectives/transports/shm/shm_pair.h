// ShmPair: the shared-memory Pair (collectives/pair.h) between two ranks on
// one host. Each direction is a byte ring in a ShmSegment (shm_segment.h):
// the sender copies into the ring, the receiver copies out (Recv) or
// reduces straight out of it (RecvPieces), and neither enters the kernel
// while data flows; a futex wakes a side that had to
// block, and only if it said it was waiting.
//
// Like the TCP Connection, a send that fits into the ring is copied inline;
// the rest is queued to a sender thread (SendQueue, collectives/
// send_queue.h), so that sending overlaps the collective's own receiving
// and reducing. The caller keeps the bytes alive until WaitSent(ticket)
// returns.
//
// Waiting: a receive first polls `spin_polls` times (sched_yield in
// between), then sleeps on the futex in slices of at most 10 ms. Between
// slices it checks the deadline, the communicator's abort flag, the peer's
// `closed` flag in the segment (set by its Shutdown or destructor) and the
// pair's TCP connection, kept open and idle as a liveness probe: the kernel
// closes it when the peer's process dies, however it dies. So a dead peer
// is named within about a slice, and nothing waits past its deadline.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_SHM_SHM_PAIR_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_SHM_SHM_PAIR_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collectives/pair.h"
#include "collectives/send_queue.h"
#include "collectives/transports/shm/shm_segment.h"

namespace gradsync {

class ShmPair final : public Pair {
 public:
  // `endpoint` is 0 for the segment's creator, 1 for the other side.
  // `liveness_fd` (owned, closed on destruction) is a connected socket to
  // the peer that carries no data; -1 for none. `aborted` is the
  // communicator-wide abort flag (must outlive this).
  ShmPair(std::unique_ptr<ShmSegment> segment, int endpoint, int peer_rank,
          int liveness_fd, const std::atomic<bool>* aborted);
  ~ShmPair() override;
  ShmPair(const ShmPair&) = delete;
  ShmPair& operator=(const ShmPair&) = delete;

  int peer() const override { return peer_; }
  absl::string_view transport() const override { return "shm"; }
  uint64_t Send(const void* data, size_t len, absl::Time deadline) override;
  [[nodiscard]] absl::Status WaitSent(uint64_t ticket,
                                      absl::Time deadline) override;
  uint64_t LastTicket() override;
  [[nodiscard]] absl::Status Recv(void* data, size_t len, absl::Time deadline,
                                  int spin_polls) override;
  [[nodiscard]] absl::Status RecvPieces(
      size_t len, size_t unit, char* scratch, size_t max_piece,
      absl::Time deadline, int spin_polls,
      absl::FunctionRef<void(const char*, size_t)> consume) override;
  bool PeerClosed() const override;
  void Shutdown() override;

 private:
  // Copies what fits into the outgoing ring now; returns the byte count.
  size_t TryWrite(const char* data, size_t len);
  // Copies all of it, waiting for space as needed.
  [[nodiscard]] absl::Status WriteAll(const char* data, size_t len,
                                      absl::Time deadline);
  // Waits until at least `need` bytes past `tail` arrived.
  [[nodiscard]] absl::Status WaitForData(uint64_t tail, size_t need,
                                         absl::Time deadline, int spin_polls);
  // Why waiting must stop (abort, peer closed or dead), OK to go on.
  [[nodiscard]] absl::Status Interrupted(bool check_liveness) const;
  // Sets this end's closed flag and wakes every waiter on both rings.
  void MarkClosed();
  // A failed write of the sender thread, named.
  [[nodiscard]] absl::Status SendError(const absl::Status& status) const;

  const std::unique_ptr<ShmSegment> segment_;
  const int endpoint_;
  const int peer_;
  const int liveness_fd_;
  const std::atomic<bool>* const aborted_;
  RingControl& out_;
  RingControl& in_;
  char* const out_data_;
  char* const in_data_;
  const uint64_t capacity_;
  SendQueue sends_;  // last: stopped in the destructor, before the rest
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_SHM_SHM_PAIR_H_
