#include "collectives/send_queue.h"

#include <utility>

namespace gradsync {

SendQueue::SendQueue(Transport transport, std::string wait_timeout)
    : transport_(std::move(transport)), wait_timeout_(std::move(wait_timeout)) {
  sender_ = std::thread([this] { SenderLoop(); });
}

SendQueue::~SendQueue() {
  if (sender_.joinable()) Stop();
}

void SendQueue::Stop(absl::FunctionRef<void()> unblock) {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  unblock();
  if (sender_.joinable()) sender_.join();
}

void SendQueue::FailLocked(absl::Status status) {
  if (error_.ok()) error_ = std::move(status);
  queue_.clear();
}

void SendQueue::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  FailLocked(std::move(status));
}

uint64_t SendQueue::Send(const void* data, size_t len, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const uint64_t ticket = next_ticket_++;
  const char* p = static_cast<const char*>(data);
  if (!error_.ok()) return ticket;  // WaitSent reports the error
  if (queue_.empty() && !busy_) {
    // Fast path: nothing ahead of us, so write what the transport takes now.
    absl::StatusOr<size_t> n = transport_.try_write(p, len);
    if (!n.ok()) {
      FailLocked(transport_.name_error(n.status()));
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

uint64_t SendQueue::LastTicket() {
  absl::MutexLock lock(&mu_);
  return next_ticket_ - 1;
}

void SendQueue::SenderLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](SendQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
          return q->stop_ || !q->queue_.empty();
        },
        this));
    if (stop_) return;
    const Item item = queue_.front();
    queue_.pop_front();
    busy_ = true;
    mu_.Unlock();
    const absl::Status s =
        transport_.write_all(item.data, item.len, item.deadline);
    mu_.Lock();
    busy_ = false;
    if (!s.ok()) {
      FailLocked(transport_.name_error(s));
    } else if (error_.ok()) {
      sent_ = item.ticket;
    }
  }
}

absl::Status SendQueue::WaitSent(uint64_t ticket, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sent_ >= ticket || !error_.ok();
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    return absl::DeadlineExceededError(wait_timeout_);
  }
  if (sent_ >= ticket) return absl::OkStatus();
  return error_;
}

}  // namespace gradsync
