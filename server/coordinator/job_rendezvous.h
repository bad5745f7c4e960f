// JobRendezvous: the rendezvous of a job's ranks through the coordinator,
// over the shared CoordinatorState: a key-value store (Set, blocking Get,
// Add, Wait) and named barriers, both scoped to a job and its rendezvous
// generation (keys live under "job/<id>/gen/<g>/"). The service's store
// RPCs and Barrier are these calls.
//
// Common errors of every call (checked in this order): INVALID_ARGUMENT:
// empty key or barrier name. NOT_FOUND: unknown job. PERMISSION_DENIED: the
// scope's worker hosts no rank of the job. FAILED_PRECONDITION: the job is
// not RENDEZVOUS or RUNNING (also when it ends while the call waits; the
// message says why it ended), or the scope's generation is not the job's.
//
// Blocking calls wait until their condition holds or their deadline
// passes; every config.wait_slice they also check `cancelled`
// (CANCELLED), shutdown (UNAVAILABLE) and whether the job ended, so that a
// cancelled or failed job releases its ranks within a slice.
//
// Threading: thread-safe; each call takes the state's mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_RENDEZVOUS_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_RENDEZVOUS_H_

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/job.h"

namespace gradsync {

class JobRendezvous {
 public:
  // `state` must outlive the rendezvous.
  explicit JobRendezvous(CoordinatorState* state) : state_(*state) {}
  JobRendezvous(const JobRendezvous&) = delete;
  JobRendezvous& operator=(const JobRendezvous&) = delete;

  // A key whose last '/'-separated part is a rank of the job
  // ("tcp/addr/2") is that rank's: only the worker holding the rank may set
  // it (PERMISSION_DENIED otherwise, nothing written). Other keys are the
  // whole job's.
  [[nodiscard]] absl::Status StoreSet(const StoreSetRequest& request);

  // Waits for the key until timeout_ms from now or `deadline`.
  // DEADLINE_EXCEEDED naming the key; CANCELLED; UNAVAILABLE.
  [[nodiscard]] absl::StatusOr<StoreGetResponse> StoreGet(
      const StoreGetRequest& request, absl::Time deadline,
      CancelledFn cancelled);

  // FAILED_PRECONDITION also when the key holds a non-integer.
  [[nodiscard]] absl::StatusOr<StoreAddResponse> StoreAdd(
      const StoreAddRequest& request);

  // DEADLINE_EXCEEDED naming the keys still missing; CANCELLED; UNAVAILABLE.
  [[nodiscard]] absl::Status StoreWait(const StoreWaitRequest& request,
                                       absl::Time deadline,
                                       CancelledFn cancelled);

  // Returns once every rank of the job has arrived at the barrier `name`
  // (names can be reused: each completion starts a new round).
  // PERMISSION_DENIED also when the rank is not on the scope's worker.
  // DEADLINE_EXCEEDED naming the missing ranks and their workers (this
  // rank's arrival is withdrawn); CANCELLED; UNAVAILABLE.
  [[nodiscard]] absl::Status Barrier(const BarrierRequest& request,
                                     absl::Time deadline,
                                     CancelledFn cancelled);

 private:
  // The job of a store call or barrier, after the common checks above.
  [[nodiscard]] absl::StatusOr<Job*> CheckScopeLocked(
      const StoreScope& scope) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_RENDEZVOUS_H_
