// ComputePool: a few threads that share a CPU-bound loop with the thread
// that runs it, so that one caller can use every core of the host.
//
// The parameter server uses it for the step it applies after the last
// worker's gradient arrived: summing N gradients of tens of MiB and the
// optimizer's update are on the critical path of every synchronous step,
// and while they run the workers only wait. Cut in parts, they run on all
// cores at once.
//
//   ComputePool pool(ComputePool::DefaultHelpers());
//   pool.For(n, /*grain=*/1 << 16, [&](size_t begin, size_t end) {
//     for (size_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
//   });
//
// For() cuts [0, n) into at most helpers() + 1 contiguous parts of at least
// `grain` items, queues all parts but the first, runs the first itself and
// then runs queued parts (its own or another caller's) until its own are
// done; only then does it sleep, until the helpers finish theirs. So a
// part never waits for a free thread, concurrent callers share the
// helpers, and a pool with no helpers runs the loop inline.
//
// `fn` must be safe to run on disjoint ranges at once; how [0, n) is cut
// must not matter to its result (an element-wise loop).
//
// Thread-safe. Destroying the pool while For() runs is undefined.
#ifndef GRADSYNC_COMMON_COMPUTE_POOL_H_
#define GRADSYNC_COMMON_COMPUTE_POOL_H_

#include <cstddef>
#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace gradsync {

class ComputePool {
 public:
  // One fewer than the host's cores (the caller is the other one).
  static int DefaultHelpers();

  // Starts `helpers` threads (< 0 counts as 0).
  explicit ComputePool(int helpers);
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;
  // Joins the helpers.
  ~ComputePool();

  int helpers() const { return static_cast<int>(threads_.size()); }

  // Runs fn(begin, end) over disjoint ranges covering [0, n) and returns
  // when every range has returned. grain 0 counts as 1.
  void For(size_t n, size_t grain, absl::FunctionRef<void(size_t, size_t)> fn)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The state one For() call shares with the threads running its parts.
  struct Call;
  struct Part {
    Call* call;
    size_t begin;
    size_t end;
  };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `part` and counts it done (takes mu_ to count).
  void Run(const Part& part) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<Part> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// pool->For(n, grain, fn), or the whole loop on this thread when `pool` is
// null (callers whose pool is optional).
void ParallelFor(ComputePool* pool, size_t n, size_t grain,
                 absl::FunctionRef<void(size_t, size_t)> fn);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_COMPUTE_POOL_H_
