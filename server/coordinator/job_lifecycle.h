// JobLifecycle: a job's way from the queue to its end, over the shared
// CoordinatorState: scheduling rounds (JobScheduler's plan applied: devices
// taken, ranks and PS shards placed, assignments mailed), the end of a job
// (succeeded, failed, cancelled: devices freed, store keys and barriers
// erased, cancellations mailed, the job retired), its restart (a failed
// job with JobSpec.max_restarts left is submitted again, resuming from its
// newest checkpoint), the loss of a worker or parameter server (the jobs
// that depended on it fail, naming it), and the announcement of runtime
// switch requests.
//
// Runtime switches (see "Switching a running job" in
// proto/coordinator.proto): request e of a job writes the binary
// SwitchDirective{e, mode, ps_addresses} under the job-store key
// "switch/<e>" of the job's current rendezvous generation, then queues
// SwitchNotice{job, e} for every worker hosting a rank of the job; a
// waiting Heartbeat returns with it at once. A worker's heartbeat carries at
// most one notice per job, the newest. For a job still PENDING, the
// directive of the newest request is written when its ranks are placed,
// and its notice is queued right after the assignment (the same heartbeat
// delivers both, the assignment first).
//
// Threading: every method runs with the state's mutex held.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_LIFECYCLE_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_LIFECYCLE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/job.h"

namespace gradsync {

class JobLifecycle {
 public:
  // `state` must outlive the lifecycle.
  explicit JobLifecycle(CoordinatorState* state) : state_(*state) {}
  JobLifecycle(const JobLifecycle&) = delete;
  JobLifecycle& operator=(const JobLifecycle&) = delete;

  // Places pending jobs, oldest first, while the oldest fits
  // (job_scheduler.h), and sets the message of the one left waiting.
  void ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Moves `job` to the final state `state` with `message`; frees its
  // devices, erases its store keys and barriers, queues cancellations
  // (unless it succeeded) to its live workers, retires it and schedules
  // pending jobs. Returns its final status. `job` must not be used after
  // the call: retiring may have dropped it. A job that fails with
  // restarts left is restarted (Restart).
  JobStatus EndLocked(Job& job, JobState state, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Marks a worker lost (`why`: "lost: no heartbeat for 5.0 s", "left:
  // ...") and fails the jobs it hosted, naming it, its ranks and last step.
  void DropWorkerLocked(const std::string& worker_id, absl::Time now,
                        absl::string_view why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Marks a parameter server lost (`why`: "was lost: no heartbeat for ...")
  // and fails the placed jobs in PS mode with shards on it.
  void DropPsLocked(const std::string& ps_id, absl::Time now,
                    absl::string_view why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // (Re)places the job's PS shards over the live servers (ps_placement.h).
  // FAILED_PRECONDITION (nothing changed) when no server is live.
  [[nodiscard]] absl::Status PlaceShardsLocked(Job& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // A runtime switch request of `job` to `mode` (SwitchJob, or --mode
  // auto with its `reason`, which goes to the log and the switch's
  // record): places PS shards first when the mode is PS and the job has
  // none (or some sit on a lost server), numbers the request and announces
  // it. Returns its epoch. FAILED_PRECONDITION: the job ended, or PS mode
  // with no live server (nothing changed).
  [[nodiscard]] absl::StatusOr<int64_t> RequestSwitchLocked(Job& job,
                                                            SyncMode mode,
                                                            std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Writes the directive of the job's newest switch request into its store
  // (current generation) and queues its notice to the job's live workers.
  void AnnounceSwitchLocked(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

 private:
  // JobSpec.max_restarts of a job about to fail: submits its spec again
  // (one restart fewer, resuming from its newest checkpoint if it wrote
  // one), placed no sooner than a lease from now; returns the note for the
  // failed job's message.
  std::string RestartLocked(Job& failed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Mails the assignments of a job just placed to its workers.
  void MailAssignmentsLocked(const Job& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_LIFECYCLE_H_
