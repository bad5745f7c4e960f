#include "worker/daemon/rpc_util.h"

#include "absl/time/clock.h"

namespace gradsync {

CancellableCalls::Scope::Scope(CancellableCalls* calls,
                               grpc::ClientContext* context)
    : calls_(calls), context_(context) {
  absl::MutexLock lock(&calls_->mu_);
  status_ = calls_->cancelled_;
  if (status_.ok()) calls_->active_.insert(context_);
}

CancellableCalls::Scope::~Scope() {
  absl::MutexLock lock(&calls_->mu_);
  calls_->active_.erase(context_);
}

void CancellableCalls::CancelAll(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.ok()) {
    cancelled_ = reason.ok() ? absl::CancelledError("cancelled") : reason;
  }
  // TryCancel is thread-safe and does not block; the calls return
  // CANCELLED promptly on their own threads.
  for (grpc::ClientContext* context : active_) context->TryCancel();
}

absl::Status CancellableCalls::status() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace gradsync
