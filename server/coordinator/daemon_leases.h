// DaemonLeases: the daemons' side of the coordinator, over the shared
// CoordinatorState: workers and parameter servers register, heartbeat to
// renew their leases (a worker's heartbeat is a long-poll that brings its
// mailbox: assignments, cancellations, switch notices), deregister, and are
// declared lost when their lease runs out (JobLifecycle fails the jobs
// that depended on them).
//
// Errors and behaviour of each call: see the CoordinatorService method of
// the same name.
// Threading: thread-safe; each call takes the state's mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_DAEMON_LEASES_H_
#define GRADSYNC_SERVER_COORDINATOR_DAEMON_LEASES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/job_lifecycle.h"

namespace gradsync {

class DaemonLeases {
 public:
  // `state` and `lifecycle` must outlive the leases.
  DaemonLeases(CoordinatorState* state, JobLifecycle* lifecycle)
      : state_(*state), lifecycle_(*lifecycle) {}
  DaemonLeases(const DaemonLeases&) = delete;
  DaemonLeases& operator=(const DaemonLeases&) = delete;

  [[nodiscard]] absl::StatusOr<RegisterWorkerResponse> RegisterWorker(
      const RegisterWorkerRequest& request);
  [[nodiscard]] absl::Status DeregisterWorker(
      const DeregisterWorkerRequest& request);
  [[nodiscard]] absl::Status DeregisterParameterServer(
      const DeregisterParameterServerRequest& request);
  [[nodiscard]] absl::StatusOr<HeartbeatResponse> Heartbeat(
      const HeartbeatRequest& request, absl::Time deadline,
      CancelledFn cancelled);
  [[nodiscard]] absl::StatusOr<RegisterParameterServerResponse>
  RegisterParameterServer(const RegisterParameterServerRequest& request);
  [[nodiscard]] absl::StatusOr<PsHeartbeatResponse> PsHeartbeat(
      const PsHeartbeatRequest& request);
  std::vector<std::string> CheckLeases(absl::Time now);
  // Renews the lease of every live worker and parameter server to `now`
  // (after the coordinator itself stalled); returns how many.
  int RenewAllLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

 private:
  // Frees `worker`'s devices held by ended jobs that its heartbeat no
  // longer lists, and places waiting jobs on them.
  void FreeEndedLocked(WorkerRecord& worker, const HeartbeatRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
  JobLifecycle& lifecycle_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_DAEMON_LEASES_H_
