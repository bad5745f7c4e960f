// CancellableCalls: a set of in-flight remote calls that can be cancelled
// together, so that stopping a daemon or cancelling a job unblocks a
// long-poll or a blocking store call at once instead of after its
// timeout. It knows no transport: each call registers how to cancel it
// (for gRPC, its ClientContext's TryCancel).
//
//   CancellableCalls calls;
//   grpc::ClientContext context;
//   CancellableCalls::Scope scope(&calls, [&] { context.TryCancel(); });
//   if (!scope.ok()) return scope.status();  // already cancelled
//   stub->Heartbeat(&context, request, &response);
//   ...  // another thread: calls.CancelAll(absl::CancelledError("stop"));
//
// Errors: Scope::status() is the CancelAll reason once cancelled.
// Threading: CancellableCalls is thread-safe; a Scope belongs to the thread
// making the call. The cancel functions run under the set's lock, from the
// thread calling CancelAll: they must not block.
#ifndef GRADSYNC_COMMON_CANCELLABLE_CALLS_H_
#define GRADSYNC_COMMON_CANCELLABLE_CALLS_H_

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gradsync {

class CancellableCalls {
 public:
  // Registers a call for the duration of the scope. A null `calls` makes
  // a scope that is always ok and cancels nothing.
  class Scope {
   public:
    Scope(CancellableCalls* calls, std::function<void()> cancel);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // False when the set was cancelled before the call started.
    bool ok() const { return status_.ok(); }
    const absl::Status& status() const { return status_; }

   private:
    CancellableCalls* const calls_;
    absl::Status status_;
  };

  // Cancels every registered call and makes later Scopes fail with
  // `reason` (the first reason wins; an OK reason counts as CANCELLED).
  void CancelAll(const absl::Status& reason);
  // OK, or the CancelAll reason.
  [[nodiscard]] absl::Status status() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<const Scope*, std::function<void()>> active_
      ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_CANCELLABLE_CALLS_H_
