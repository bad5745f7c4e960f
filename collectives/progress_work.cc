#include "collectives/progress_work.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

void ProgressWork::Start() {
  absl::MutexLock lock(&mu_);
  started_ = absl::Now();
}

void ProgressWork::Finish(absl::Status status) {
  absl::MutexLock lock(&mu_);
  status_ = std::move(status);
  finished_ = absl::Now();
  done_ = true;
}

absl::Status ProgressWork::Wait(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithDeadline(absl::Condition(&done_), deadline)) {
      return status_;
    }
  }
  const absl::Status expired = expire_(what_);
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&done_), kAbortGrace);
  return expired;
}

bool ProgressWork::Done() {
  absl::MutexLock lock(&mu_);
  return done_;
}

absl::StatusOr<absl::Duration> ProgressWork::Elapsed() {
  absl::MutexLock lock(&mu_);
  if (!done_ || !status_.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what_, done_ ? " failed" : " has not completed",
                     ", so it has no duration"));
  }
  return finished_ - started_;
}

}  // namespace gradsync
