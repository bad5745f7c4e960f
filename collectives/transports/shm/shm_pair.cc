#include "collectives/transports/shm/shm_pair.h"

#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/tcp_congestion.h"

namespace gradsync {
namespace {

// Longest sleep between checks for abort, peer death and the deadline.
constexpr absl::Duration kSlice = absl::Milliseconds(10);

// Copies `len` bytes between a linear buffer and a ring at `pos`.
void CopyToRing(char* ring, uint64_t cap, uint64_t pos, const char* src,
                size_t len) {
  const size_t off = pos % cap;
  const size_t first = std::min<size_t>(len, cap - off);
  std::memcpy(ring + off, src, first);
  if (first < len) std::memcpy(ring, src + first, len - first);
}

void CopyFromRing(const char* ring, uint64_t cap, uint64_t pos, char* dst,
                  size_t len) {
  const size_t off = pos % cap;
  const size_t first = std::min<size_t>(len, cap - off);
  std::memcpy(dst, ring + off, first);
  if (first < len) std::memcpy(dst + first, ring, len - first);
}

// Waits until ready() or an interruption; see the header's "Waiting".
// `waiting` tells the other side to bump and wake `event`.
template <typename Ready, typename Interrupted>
[[nodiscard]] absl::Status Await(std::atomic<uint32_t>& event,
                                 std::atomic<uint32_t>& waiting, Ready ready,
                                 Interrupted interrupted, absl::Time deadline,
                                 int spin_polls) {
  for (int i = 0; i < spin_polls; ++i) {
    if (ready()) return absl::OkStatus();
    // Spinning stops at the deadline too (the yields may take long).
    if (i % 64 == 63 && absl::Now() >= deadline) break;
    sched_yield();
  }
  bool slept_out = false;
  while (true) {
    const uint32_t seen = event.load(std::memory_order_acquire);
    waiting.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ready()) break;
    if (absl::Status s = interrupted(slept_out); !s.ok()) {
      waiting.store(0, std::memory_order_relaxed);
      return s;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      waiting.store(0, std::memory_order_relaxed);
      return absl::DeadlineExceededError("deadline passed");
    }
    const absl::Duration slice = std::min(kSlice, deadline - now);
    FutexWait(&event, seen, slice);
    slept_out = absl::Now() - now >= slice;
  }
  waiting.store(0, std::memory_order_relaxed);
  return absl::OkStatus();
}

// After moving a counter: wakes the other side if it waits (the fence
// pairs with the one in Await, so one of the two sees the other).
void Notify(std::atomic<uint32_t>& event, std::atomic<uint32_t>& waiting) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiting.load(std::memory_order_relaxed) != 0) {
    event.fetch_add(1, std::memory_order_release);
    FutexWakeAll(&event);
  }
}

}  // namespace

ShmPair::ShmPair(std::unique_ptr<ShmSegment> segment, int endpoint,
                 int peer_rank, int liveness_fd,
                 const std::atomic<bool>* aborted)
    : segment_(std::move(segment)),
      endpoint_(endpoint),
      peer_(peer_rank),
      liveness_fd_(liveness_fd),
      aborted_(aborted),
      out_(segment_->ring(endpoint)),
      in_(segment_->ring(1 - endpoint)),
      out_data_(segment_->data(endpoint)),
      in_data_(segment_->data(1 - endpoint)),
      capacity_(segment_->capacity()),
      sends_(
          SendQueue::Transport{
              [this](const char* data, size_t len) -> absl::StatusOr<size_t> {
                return TryWrite(data, len);
              },
              [this](const char* data, size_t len, absl::Time deadline) {
                return WriteAll(data, len, deadline);
              },
              [this](const absl::Status& s) { return SendError(s); }},
          absl::StrCat("timed out sending to rank ", peer_rank,
                       " over shared memory: it is not receiving (stuck, "
                       "or in another collective)")) {}

ShmPair::~ShmPair() {
  // MarkClosed also ends a send blocked on a full ring; the sender thread
  // must be gone before the liveness socket closes.
  sends_.Stop([this] { MarkClosed(); });
  if (liveness_fd_ >= 0) close(liveness_fd_);
}

absl::Status ShmPair::SendError(const absl::Status& s) const {
  return absl::Status(s.code(),
                      absl::IsDeadlineExceeded(s)
                          ? absl::StrCat("timed out sending to rank ", peer_,
                                         " over shared memory: it is not "
                                         "receiving (stuck, or in another "
                                         "collective)")
                          : absl::StrCat("sending to rank ", peer_,
                                         " over shared memory: ", s.message()));
}

absl::Status ShmPair::Interrupted(bool check_liveness) const {
  if (aborted_ != nullptr && aborted_->load(std::memory_order_relaxed)) {
    return absl::AbortedError("the communicator was aborted");
  }
  if (segment_->header().closed[endpoint_].load() != 0) {
    return absl::AbortedError("this end of the channel was shut down");
  }
  if (segment_->header().closed[1 - endpoint_].load() != 0) {
    return absl::UnavailableError(
        "it closed its end of the shared memory channel (it failed, was "
        "aborted or ended)");
  }
  if (check_liveness && PeerClosed()) {
    return absl::UnavailableError(
        "it died or closed its connection (its process exited or was "
        "killed; look at that rank's log)");
  }
  return absl::OkStatus();
}

size_t ShmPair::TryWrite(const char* data, size_t len) {
  const uint64_t head = out_.head.load(std::memory_order_relaxed);
  const uint64_t tail = out_.tail.load(std::memory_order_acquire);
  const size_t n = std::min<uint64_t>(len, capacity_ - (head - tail));
  if (n == 0) return 0;
  CopyToRing(out_data_, capacity_, head, data, n);
  out_.head.store(head + n, std::memory_order_release);
  Notify(out_.data_event, out_.reader_waiting);
  return n;
}

absl::Status ShmPair::WriteAll(const char* data, size_t len,
                               absl::Time deadline) {
  while (len > 0) {
    const size_t n = TryWrite(data, len);
    data += n;
    len -= n;
    if (len == 0) break;
    absl::Status s = Await(
        out_.space_event, out_.writer_waiting,
        [this] {
          return out_.head.load(std::memory_order_relaxed) -
                     out_.tail.load(std::memory_order_acquire) <
                 capacity_;
        },
        [this](bool liveness) { return Interrupted(liveness); }, deadline, 0);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

uint64_t ShmPair::Send(const void* data, size_t len, absl::Time deadline) {
  return sends_.Send(data, len, deadline);
}

uint64_t ShmPair::LastTicket() { return sends_.LastTicket(); }

absl::Status ShmPair::WaitSent(uint64_t ticket, absl::Time deadline) {
  return sends_.WaitSent(ticket, deadline);
}

absl::Status ShmPair::WaitForData(uint64_t tail, size_t need,
                                  absl::Time deadline, int spin_polls) {
  absl::Status s = Await(
      in_.data_event, in_.reader_waiting,
      [this, tail, need] {
        return in_.head.load(std::memory_order_acquire) - tail >= need;
      },
      [this](bool liveness) { return Interrupted(liveness); }, deadline,
      spin_polls);
  if (absl::IsDeadlineExceeded(s)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "timed out waiting for data from rank ", peer_,
        " over shared memory (it is stuck, slow, or waiting in another "
        "collective)"));
  }
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("receiving from rank ", peer_,
                                     " over shared memory: ", s.message()));
  }
  return s;
}

absl::Status ShmPair::Recv(void* data, size_t len, absl::Time deadline,
                           int spin_polls) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    const uint64_t tail = in_.tail.load(std::memory_order_relaxed);
    const uint64_t head = in_.head.load(std::memory_order_acquire);
    const size_t n = std::min<uint64_t>(len, head - tail);
    if (n == 0) {
      absl::Status s = WaitForData(tail, 1, deadline, spin_polls);
      if (!s.ok()) return s;
      continue;
    }
    CopyFromRing(in_data_, capacity_, tail, p, n);
    in_.tail.store(tail + n, std::memory_order_release);
    Notify(in_.space_event, in_.writer_waiting);
    p += n;
    len -= n;
  }
  return absl::OkStatus();
}

absl::Status ShmPair::RecvPieces(
    size_t len, size_t unit, char* /*scratch*/, size_t max_piece,
    absl::Time deadline, int spin_polls,
    absl::FunctionRef<void(const char*, size_t)> consume) {
  while (len > 0) {
    const uint64_t tail = in_.tail.load(std::memory_order_relaxed);
    const uint64_t head = in_.head.load(std::memory_order_acquire);
    if (head - tail < unit) {
      absl::Status s = WaitForData(tail, unit, deadline, spin_polls);
      if (!s.ok()) return s;
      continue;
    }
    const size_t off = tail % capacity_;
    size_t n = std::min<uint64_t>(
        {head - tail, capacity_ - off, len, std::max(unit, max_piece)});
    n -= n % unit;
    if (n == 0) {
      // An element straddles the ring's end: lend a copy of it.
      char one[16];
      CopyFromRing(in_data_, capacity_, tail, one, unit);
      consume(one, unit);
      n = unit;
    } else {
      consume(in_data_ + off, n);
    }
    // Only now may the writer reuse those bytes.
    in_.tail.store(tail + n, std::memory_order_release);
    Notify(in_.space_event, in_.writer_waiting);
    len -= n;
  }
  return absl::OkStatus();
}

bool ShmPair::PeerClosed() const {
  if (segment_->header().closed[1 - endpoint_].load() != 0) return true;
  return liveness_fd_ >= 0 && TcpPeerClosed(liveness_fd_);
}

void ShmPair::MarkClosed() {
  segment_->header().closed[endpoint_].store(1);
  for (RingControl* r : {&out_, &in_}) {
    r->data_event.fetch_add(1);
    r->space_event.fetch_add(1);
    FutexWakeAll(&r->data_event);
    FutexWakeAll(&r->space_event);
  }
}

void ShmPair::Shutdown() {
  MarkClosed();
  if (liveness_fd_ >= 0) shutdown(liveness_fd_, SHUT_RDWR);
  sends_.Fail(absl::AbortedError(
      absl::StrCat("shared memory channel to rank ", peer_, " shut down")));
}

}  // namespace gradsync
