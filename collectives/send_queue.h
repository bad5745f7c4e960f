// SendQueue: a Pair's ordered sends (collectives/pair.h), shared by the TCP
// Connection and the shared-memory ShmPair. Send() first writes what the
// transport takes at once, if nothing is queued or being written ahead of
// it; the rest goes to the queue's sender thread, which writes each send
// in full and in order, so that sending overlaps the collective's own
// receiving and reducing. Every send gets a ticket; the caller keeps the
// bytes alive until WaitSent(ticket) returns. The first failed write fails
// every later send (WaitSent returns it) and drops what is queued.
//
// Threading: thread-safe. The transport's functions run on the caller's
// thread (try_write, under the queue's lock) and on the sender thread
// (write_all, without it). Lock order: the queue's mutex is a leaf lock.
#ifndef GRADSYNC_COLLECTIVES_SEND_QUEUE_H_
#define GRADSYNC_COLLECTIVES_SEND_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

class SendQueue {
 public:
  // How a transport writes. Each must outlive the queue's thread (Stop).
  struct Transport {
    // Writes what fits now without blocking: how many bytes, or the error
    // that ends the pair.
    std::function<absl::StatusOr<size_t>(const char* data, size_t len)>
        try_write;
    // Writes all of it, blocking until `deadline` at the latest.
    std::function<absl::Status(const char* data, size_t len,
                               absl::Time deadline)>
        write_all;
    // The pair's error for a failed write, naming the peer.
    std::function<absl::Status(const absl::Status& status)> name_error;
  };

  // Starts the sender thread. `wait_timeout` is WaitSent's message when
  // its deadline passes.
  SendQueue(Transport transport, std::string wait_timeout);
  // Stop() unless it ran.
  ~SendQueue();
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // Queues `len` bytes at `data` (or writes them at once); the ticket to
  // wait on. `deadline` bounds the write itself.
  uint64_t Send(const void* data, size_t len, absl::Time deadline);
  // Blocks until the send with `ticket` and every one before it left, the
  // queue failed (its error), or `deadline` (DEADLINE_EXCEEDED, the
  // wait_timeout message).
  [[nodiscard]] absl::Status WaitSent(uint64_t ticket, absl::Time deadline);
  // The ticket of the last send (0 if none): waiting on it drains.
  uint64_t LastTicket();
  // Fails the queue with `status` (the first failure wins) and drops what
  // is queued; a write in progress runs on.
  void Fail(absl::Status status);
  // Ends the sender thread after the write in progress, which `unblock`
  // (called once the thread is told to stop) may cut short; then joins it.
  // Queued sends are not written. Call once, before what the transport's
  // functions use goes away.
  void Stop(absl::FunctionRef<void()> unblock = [] {});

 private:
  struct Item {
    const char* data;
    size_t len;
    uint64_t ticket;
    absl::Time deadline;
  };

  void SenderLoop();
  void FailLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Transport transport_;
  const std::string wait_timeout_;

  absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;  // every ticket <= sent_ left
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // the sender thread mid-write
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::thread sender_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_SEND_QUEUE_H_
