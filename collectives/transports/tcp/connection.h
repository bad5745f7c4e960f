// Connection: the TCP Pair (collectives/pair.h): one persistent TCP
// connection between this rank and a peer,
// with a dedicated sender thread so that sending overlaps the collective's
// own receiving and reducing (the calling thread receives).
//
// Sends are queued in order and identified by a ticket (SendQueue,
// collectives/send_queue.h); the caller must keep the bytes alive until
// WaitSent(ticket) returns. A send that the kernel can take at once is
// written inline (no thread hand-off), which keeps small messages fast.
//
// Errors carry the peer rank; a failed connection stays failed.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_CONNECTION_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_CONNECTION_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collectives/pair.h"
#include "collectives/send_queue.h"
#include "collectives/transports/tcp/socket.h"

namespace gradsync {

class Connection final : public Pair {
 public:
  // `aborted` is the communicator-wide abort flag (must outlive this).
  Connection(Socket socket, int peer_rank, const std::atomic<bool>* aborted);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int peer() const override { return peer_; }
  absl::string_view transport() const override { return "tcp"; }

  // Queues `len` bytes at `data` after everything queued before. Returns
  // the ticket to wait on. `deadline` bounds the send itself.
  uint64_t Send(const void* data, size_t len, absl::Time deadline) override;
  // Blocks until the send with `ticket` (and all before it) left, the
  // connection failed, or `deadline` passed.
  [[nodiscard]] absl::Status WaitSent(uint64_t ticket,
                                      absl::Time deadline) override;
  // Ticket of the last queued send (0 if none): waiting on it drains.
  uint64_t LastTicket() override;

  // Receives exactly `len` bytes (calling thread), first polling up to
  // `spin_polls` times without blocking (see TcpOptions::spin_polls).
  [[nodiscard]] absl::Status Recv(void* data, size_t len, absl::Time deadline,
                                  int spin_polls) override;

  [[nodiscard]] absl::Status RecvPieces(
      size_t len, size_t unit, char* scratch, size_t max_piece,
      absl::Time deadline, int spin_polls,
      absl::FunctionRef<void(const char*, size_t)> consume) override;

  // Resizes the kernel's send buffer (see Socket::SetSendBuffer).
  [[nodiscard]] absl::Status SetSendBuffer(int bytes);

  // True if the peer has closed its side (polled without blocking).
  bool PeerClosed() const override;

  // Fails queued sends and wakes blocked calls (abort path).
  void Shutdown() override;

 private:
  [[nodiscard]] absl::Status WithPeer(const absl::Status& status,
                                      absl::string_view what);

  Socket socket_;
  const int peer_;
  const std::atomic<bool>* const aborted_;
  SendQueue sends_;  // last: its thread stops before the socket goes
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_CONNECTION_H_
