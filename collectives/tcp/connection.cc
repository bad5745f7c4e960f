#include "collectives/tcp/connection.h"

#include <poll.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {
Connection::Connection(Socket socket, int peer_rank,
                       const std::atomic<bool>* aborted)
    : socket_(std::move(socket)), peer_(peer_rank), aborted_(aborted) {
  sender_ = std::thread([this] { SenderLoop(); });
}

Connection::~Connection() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  sender_.join();
}

absl::Status Connection::WithPeer(const absl::Status& status,
                                  absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, " rank ", peer_, ": ",
                                                  status.message()));
}

void Connection::Fail(absl::Status status) {
  if (error_.ok()) error_ = std::move(status);
  queue_.clear();
}

uint64_t Connection::Send(const void* data, size_t len, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const uint64_t ticket = next_ticket_++;
  const char* p = static_cast<const char*>(data);
  if (!error_.ok()) return ticket;  // WaitSent reports the error
  if (queue_.empty() && !busy_) {
    // Fast path: nothing ahead of us, so write what the kernel takes now.
    auto n = socket_.SendNonBlocking(p, len);
    if (!n.ok()) {
      Fail(WithPeer(n.status(), "sending to"));
      return ticket;
    }
    if (*n == len) {
      sent_ = ticket;
      return ticket;
    }
    p += *n;
    len -= *n;
  }
  queue_.push_back(Item{p, len, ticket, deadline});
  return ticket;
}

uint64_t Connection::LastTicket() {
  absl::MutexLock lock(&mu_);
  return next_ticket_ - 1;
}

void Connection::SenderLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](Connection* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
          return c->stop_ || !c->queue_.empty();
        },
        this));
    if (stop_) return;
    Item item = queue_.front();
    queue_.pop_front();
    busy_ = true;
    mu_.Unlock();
    absl::Status s =
        socket_.SendAll(item.data, item.len, item.deadline, aborted_);
    mu_.Lock();
    busy_ = false;
    if (!s.ok()) {
      Fail(WithPeer(s, "sending to"));
    } else if (error_.ok()) {
      sent_ = item.ticket;
    }
  }
}

absl::Status Connection::WaitSent(uint64_t ticket, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sent_ >= ticket || !error_.ok();
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "timed out sending to rank ", peer_,
        ": it is not receiving (stuck, or in another collective)"));
  }
  if (sent_ >= ticket) return absl::OkStatus();
  return error_;
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

bool Connection::PeerClosed() const {
  pollfd p{socket_.fd(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

void Connection::Shutdown() {
  socket_.Shutdown();
  absl::MutexLock lock(&mu_);
  Fail(absl::AbortedError(
      absl::StrCat("connection to rank ", peer_, " shut down")));
}

}  // namespace gradsync
