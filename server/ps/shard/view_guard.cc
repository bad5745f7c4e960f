#include "server/ps/shard/view_guard.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status ViewGuard::BeginWriteLocked(
    absl::Time deadline, absl::FunctionRef<absl::Status()> ended,
    const std::string& what) {
  auto may_write = [this, &ended]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_) {
    return !ended().ok() || (!writing_ && readers_ == 0);
  };
  if (!mu_->AwaitWithDeadline(absl::Condition(&may_write), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        what, " timed out waiting for ", readers_,
        " parameter readers (pulls or state fetches still sending)",
        writing_ ? " and another update" : "",
        "; a client may have stopped reading its stream"));
  }
  if (absl::Status status = ended(); !status.ok()) return status;
  writing_ = true;
  return absl::OkStatus();
}

void ViewGuard::ReleaseReader() {
  absl::MutexLock lock(mu_);
  --readers_;
}

}  // namespace gradsync
