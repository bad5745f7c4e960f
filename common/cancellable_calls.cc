#include "common/cancellable_calls.h"

#include <utility>

namespace gradsync {

CancellableCalls::Scope::Scope(CancellableCalls* calls,
                               std::function<void()> cancel)
    : calls_(calls) {
  if (calls_ == nullptr) return;
  absl::MutexLock lock(&calls_->mu_);
  status_ = calls_->cancelled_;
  if (status_.ok()) calls_->active_.emplace(this, std::move(cancel));
}

CancellableCalls::Scope::~Scope() {
  if (calls_ == nullptr) return;
  absl::MutexLock lock(&calls_->mu_);
  calls_->active_.erase(this);
}

void CancellableCalls::CancelAll(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.ok()) {
    cancelled_ = reason.ok() ? absl::CancelledError("cancelled") : reason;
  }
  // The calls return CANCELLED promptly on their own threads.
  for (auto& [scope, cancel] : active_) cancel();
}

absl::Status CancellableCalls::status() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace gradsync
