#include "collectives/transports/tcp/connection.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/tcp_congestion.h"

namespace gradsync {
Connection::Connection(Socket socket, int peer_rank,
                       const std::atomic<bool>* aborted)
    : socket_(std::move(socket)),
      peer_(peer_rank),
      aborted_(aborted),
      sends_(SendQueue::Transport{
                 [this](const char* data, size_t len) {
                   return socket_.SendNonBlocking(data, len);
                 },
                 [this](const char* data, size_t len, absl::Time deadline) {
                   return socket_.SendAll(data, len, deadline, aborted_);
                 },
                 [this](const absl::Status& s) {
                   return WithPeer(s, "sending to");
                 }},
             absl::StrCat("timed out sending to rank ", peer_rank,
                          ": it is not receiving (stuck, or in another "
                          "collective)")) {}

Connection::~Connection() = default;

absl::Status Connection::WithPeer(const absl::Status& status,
                                  absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, " rank ", peer_, ": ",
                                                  status.message()));
}

uint64_t Connection::Send(const void* data, size_t len, absl::Time deadline) {
  return sends_.Send(data, len, deadline);
}

uint64_t Connection::LastTicket() { return sends_.LastTicket(); }

absl::Status Connection::WaitSent(uint64_t ticket, absl::Time deadline) {
  return sends_.WaitSent(ticket, deadline);
}

absl::Status Connection::Recv(void* data, size_t len, absl::Time deadline,
                              int spin_polls) {
  absl::Status s = socket_.RecvAll(data, len, deadline, aborted_, spin_polls);
  if (s.ok()) return s;
  if (absl::IsDeadlineExceeded(s)) {
    return absl::DeadlineExceededError(
        absl::StrCat("timed out waiting for data from rank ", peer_,
                     " (it is stuck, slow, or waiting in another collective)"));
  }
  return WithPeer(s, "receiving from");
}

absl::Status Connection::RecvPieces(
    size_t len, size_t unit, char* scratch, size_t max_piece,
    absl::Time deadline, int spin_polls,
    absl::FunctionRef<void(const char*, size_t)> consume) {
  const size_t piece = std::max(unit, max_piece / unit * unit);
  while (len > 0) {
    const size_t n = std::min(piece, len);
    absl::Status s = Recv(scratch, n, deadline, spin_polls);
    if (!s.ok()) return s;
    consume(scratch, n);
    len -= n;
  }
  return absl::OkStatus();
}

absl::Status Connection::SetSendBuffer(int bytes) {
  absl::Status s = socket_.SetSendBuffer(bytes);
  if (s.ok()) return s;
  return WithPeer(s, "resizing the send buffer of the connection to");
}

bool Connection::PeerClosed() const { return TcpPeerClosed(socket_.fd()); }

void Connection::Shutdown() {
  socket_.Shutdown();
  sends_.Fail(absl::AbortedError(
      absl::StrCat("connection to rank ", peer_, " shut down")));
}

}  // namespace gradsync
