// A set of in-flight RPCs of the worker daemon's coordinator clients that
// can be cancelled together, so that stopping the daemon or cancelling a job
// unblocks a long-poll or a blocking store call at once instead of after its
// timeout.
//
//   CancellableCalls calls;
//   grpc::ClientContext context;
//   CancellableCalls::Scope scope(&calls, &context);  // cancelled with calls
//   if (!scope.ok()) return scope.status();           // already cancelled
//   stub->Heartbeat(&context, request, &response);
//   ...  // another thread: calls.CancelAll(absl::CancelledError("stop"));
//
// Errors: Scope::status() is the CancelAll reason once cancelled.
// Threading: CancellableCalls is thread-safe; a Scope belongs to the thread
// making the call.
#ifndef GRADSYNC_WORKER_DAEMON_RPC_UTIL_H_
#define GRADSYNC_WORKER_DAEMON_RPC_UTIL_H_

#include <grpcpp/client_context.h>

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/rpc_deadline.h"

namespace gradsync {

class CancellableCalls {
 public:
  // Registers a call for the duration of the scope.
  class Scope {
   public:
    Scope(CancellableCalls* calls, grpc::ClientContext* context);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // False when the set was cancelled before the call started.
    bool ok() const { return status_.ok(); }
    const absl::Status& status() const { return status_; }

   private:
    CancellableCalls* const calls_;
    grpc::ClientContext* const context_;
    absl::Status status_;
  };

  // Cancels every registered call and makes later Scopes fail with
  // `reason` (the first reason wins).
  void CancelAll(const absl::Status& reason);
  // OK, or the CancelAll reason.
  [[nodiscard]] absl::Status status() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<grpc::ClientContext*> active_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_RPC_UTIL_H_
