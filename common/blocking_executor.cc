#include "common/blocking_executor.h"

#include <utility>

namespace gradsync {

BlockingExecutor::BlockingExecutor(absl::Duration idle_timeout)
    : idle_timeout_(idle_timeout) {}

BlockingExecutor::~BlockingExecutor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    mu_.Await(absl::Condition(
        +[](ThreadList* threads) { return threads->empty(); }, &threads_));
  }
  JoinExited();
}

void BlockingExecutor::Schedule(std::function<void()> closure) {
  JoinExited();
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(closure));
  // An idle thread not already promised to an earlier closure takes it;
  // otherwise a new thread does.
  if (idle_ >= static_cast<int>(queue_.size())) return;
  threads_.emplace_front();
  const ThreadList::iterator self = threads_.begin();
  *self = std::thread([this, self] { Loop(self); });
}

int BlockingExecutor::threads() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(threads_.size());
}

void BlockingExecutor::JoinExited() {
  std::vector<std::thread> exited;
  {
    absl::MutexLock lock(&mu_);
    exited.swap(exited_);
  }
  for (std::thread& thread : exited) thread.join();
}

void BlockingExecutor::Loop(ThreadList::iterator self) {
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  };
  mu_.Lock();
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) break;
      ++idle_;
      const bool woken =
          mu_.AwaitWithTimeout(absl::Condition(&has_work), idle_timeout_);
      --idle_;
      if (!woken) break;  // idle for idle_timeout_
      continue;
    }
    std::function<void()> closure = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    closure();
    closure = nullptr;  // its captures die outside the lock
    mu_.Lock();
  }
  // Hand our std::thread to whoever joins next; the thread object may
  // not be waiting for this thread's end while this thread owns it.
  exited_.push_back(std::move(*self));
  threads_.erase(self);
  mu_.Unlock();
}

}  // namespace gradsync
