// BlockingExecutor: runs closures that may block (wait for a condition with
// a deadline) on threads of its own, so that the thread that schedules them
// never does. A closure never waits for a free thread: if none is idle, a
// new one starts. Threads that stay idle for `idle_timeout` exit (down to
// none), so the pool is as large as the most closures ever blocked at once
// and shrinks back after.
//
// The parameter server's callback handlers use it: gRPC runs their
// reactions on its few polling threads, which must never block, while a
// shard's waits (for the last worker's push, the staleness bound, readers)
// do.
//
//   BlockingExecutor executor;
//   executor.Schedule([reactor] { reactor->WaitAndReply(); });
//   ...
//   // ~BlockingExecutor waits for the closures in flight to return.
//
// Thread-safe: Schedule may be called from any thread, closures included.
#ifndef GRADSYNC_COMMON_BLOCKING_EXECUTOR_H_
#define GRADSYNC_COMMON_BLOCKING_EXECUTOR_H_

#include <deque>
#include <functional>
#include <list>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

class BlockingExecutor {
 public:
  explicit BlockingExecutor(absl::Duration idle_timeout = absl::Seconds(10));
  BlockingExecutor(const BlockingExecutor&) = delete;
  BlockingExecutor& operator=(const BlockingExecutor&) = delete;
  // Runs the closures already scheduled, waits for them to return and for
  // every thread to exit. Schedule must not be called during or after it.
  ~BlockingExecutor();

  // Runs `closure` on a pool thread: an idle one, else a new one.
  void Schedule(std::function<void()> closure) ABSL_LOCKS_EXCLUDED(mu_);

  // Threads alive now (busy or idle), for tests and stats.
  int threads() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using ThreadList = std::list<std::thread>;

  void Loop(ThreadList::iterator self) ABSL_LOCKS_EXCLUDED(mu_);
  // Joins threads that left Loop (they are about to return).
  void JoinExited() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration idle_timeout_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  ThreadList threads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> exited_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_BLOCKING_EXECUTOR_H_
