// ProgressWork: the Work of a collective that a communicator's progress
// thread runs (the TCP communicator's, the hierarchical one's). The thread
// calls Start when it takes the collective up and Finish when it ends; the
// caller waits through a ProgressWorkHandle, which keeps it alive.
//
// A Wait whose deadline passes first aborts the communicator through
// `expire`, which builds the DEADLINE_EXCEEDED error (naming the rank and
// `what`) and aborts, and then waits up to kAbortGrace for the collective
// to end, since aborting closes its connections: a collective cannot be
// half-cancelled without desynchronising the ranks.
//
// Threading: thread-safe; `expire` is called without the lock held.
#ifndef GRADSYNC_COLLECTIVES_PROGRESS_WORK_H_
#define GRADSYNC_COLLECTIVES_PROGRESS_WORK_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"

namespace gradsync {

class ProgressWork : public Work {
 public:
  // How long Wait waits for the collective to end after `expire` aborted.
  static constexpr absl::Duration kAbortGrace = absl::Seconds(10);

  // `expire(what)`: the error of a caller's deadline passed, after it has
  // aborted the communicator.
  ProgressWork(std::string what,
               std::function<absl::Status(const std::string& what)> expire)
      : what_(std::move(what)), expire_(std::move(expire)) {}

  // The progress thread takes the collective up.
  void Start();
  void Finish(absl::Status status);

  [[nodiscard]] absl::Status Wait(absl::Time deadline) override;
  bool Done() override;
  [[nodiscard]] absl::StatusOr<absl::Duration> Elapsed() override;

 private:
  const std::string what_;
  const std::function<absl::Status(const std::string&)> expire_;
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Time started_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time finished_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// The caller's handle: keeps the shared ProgressWork alive.
class ProgressWorkHandle : public Work {
 public:
  explicit ProgressWorkHandle(std::shared_ptr<ProgressWork> work)
      : work_(std::move(work)) {}
  [[nodiscard]] absl::Status Wait(absl::Time deadline) override {
    return work_->Wait(deadline);
  }
  bool Done() override { return work_->Done(); }
  [[nodiscard]] absl::StatusOr<absl::Duration> Elapsed() override {
    return work_->Elapsed();
  }

 private:
  std::shared_ptr<ProgressWork> work_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_PROGRESS_WORK_H_
