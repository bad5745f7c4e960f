#include "common/compute_pool.h"

#include <algorithm>

namespace gradsync {

struct ComputePool::Call {
  explicit Call(absl::FunctionRef<void(size_t, size_t)> f) : fn(f) {}
  absl::FunctionRef<void(size_t, size_t)> fn;
  int pending = 0;  // parts not yet returned; guarded by the pool's mu_
};

int ComputePool::DefaultHelpers() {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 1 ? static_cast<int>(cores) - 1 : 0;
}

ComputePool::ComputePool(int helpers) {
  for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { Loop(); });
}

ComputePool::~ComputePool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void ComputePool::For(size_t n, size_t grain,
                      absl::FunctionRef<void(size_t, size_t)> fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  // Every part gets at least `grain` items.
  const size_t parts = std::min<size_t>(threads_.size() + 1, n / grain);
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  // Balanced: the first n % parts parts get one item more.
  auto begin_of = [&](size_t p) {
    return p * (n / parts) + std::min(p, n % parts);
  };
  Call call(fn);
  {
    absl::MutexLock lock(&mu_);
    call.pending = static_cast<int>(parts);
    for (size_t p = 1; p < parts; ++p) {
      queue_.push_back(Part{&call, begin_of(p), begin_of(p + 1)});
    }
  }
  Run(Part{&call, 0, begin_of(1)});
  // Help with whatever is queued (a helper may be busy elsewhere) rather
  // than sleep while a part of ours waits for a thread.
  mu_.Lock();
  while (call.pending > 0 && !queue_.empty()) {
    const Part part = queue_.front();
    queue_.pop_front();
    mu_.Unlock();
    Run(part);
    mu_.Lock();
  }
  mu_.Await(absl::Condition(
      +[](int* pending) { return *pending == 0; }, &call.pending));
  mu_.Unlock();
}

void ComputePool::Run(const Part& part) {
  part.call->fn(part.begin, part.end);
  absl::MutexLock lock(&mu_);
  --part.call->pending;
}

void ComputePool::Loop() {
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  };
  mu_.Lock();
  for (;;) {
    mu_.Await(absl::Condition(&has_work));
    if (queue_.empty()) break;  // stopping, nothing left
    const Part part = queue_.front();
    queue_.pop_front();
    mu_.Unlock();
    Run(part);
    mu_.Lock();
  }
  mu_.Unlock();
}

void ParallelFor(ComputePool* pool, size_t n, size_t grain,
                 absl::FunctionRef<void(size_t, size_t)> fn) {
  if (pool != nullptr) {
    pool->For(n, grain, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace gradsync
