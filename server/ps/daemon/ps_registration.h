// PsRegistration: a parameter server's conversation with the coordinator
// (proto/coordinator.proto, "Parameter servers"). It registers the server
// (host, the address workers connect to, pid), then a heartbeat thread
// calls PsHeartbeat every heartbeat_ms with the counters of every shard
// the server holds (all jobs) and releases, through the PsService, every
// shard of each job the reply names in release_job_ids (jobs that ended).
//
// State (of the heartbeat thread):
//
//   UNREGISTERED --RegisterParameterServer ok--> REGISTERED
//        ^                                           |
//        +----------- PsHeartbeat NOT_FOUND ---------+
//
// (the coordinator declared the server lost or restarted: it registers
// anew and gets a new ps_id). Any other RPC error: retried every
// heartbeat (or retry_interval while unregistered); the first failure of
// an outage is logged with the coordinator's address, and so is the
// recovery. Stop() from any state ends the thread.
//
// Every RPC has a deadline (rpc_timeout); Stop cancels the call in
// flight.
//
//   PsRegistration registration(config, ConnectCoordinator(address),
//                               server->service());
//   RETURN_IF_ERROR(registration.Register());   // retries up to 30 s
//   registration.StartHeartbeats();
//   ... until SIGTERM ...
//   registration.Stop();
//
// Errors (Register): UNAVAILABLE or DEADLINE_EXCEEDED naming the
// coordinator when it could not be reached within register_timeout; the
// coordinator's own status at once when retrying cannot help (for example
// UNIMPLEMENTED from a coordinator without parameter-server support);
// CANCELLED when Stop was called meanwhile.
// Threading: thread-safe; Register and StartHeartbeats from one thread,
// Stop from any (also while the others run). Lock order: mu_ only.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_REGISTRATION_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_REGISTRATION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/cancellable_calls.h"
#include "proto/coordinator.pb.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"
#include "server/ps/daemon/ps_service.h"

namespace gradsync {

struct PsRegistrationConfig {
  std::string coordinator;  // "host:port", for messages
  std::string host;         // this machine's host name
  std::string address;      // "host:port" that workers connect to
  // The tensor plane's port on the host of `address` (0: none), where
  // `gradsync links probe` measures this host's link.
  int tensor_port = 0;
  int pid = 0;
  std::string join_token;  // the cluster's (daemon_admission.h); may be ""
  // Longest Register keeps retrying a coordinator it cannot reach.
  absl::Duration register_timeout = absl::Seconds(30);
  absl::Duration rpc_timeout = absl::Seconds(5);
  // Pause between registration attempts.
  absl::Duration retry_interval = absl::Milliseconds(500);
  // Used when the coordinator does not say (heartbeat_ms 0).
  absl::Duration default_heartbeat = absl::Seconds(1);
  // One line per event; null: standard error.
  std::function<void(absl::string_view line)> log;
  // Called after each call to the coordinator (registering or a
  // heartbeat): true when it succeeded, false when it failed or the
  // coordinator no longer knows this server (the readiness of
  // --health-listen). May be empty.
  std::function<void(bool in_touch)> on_contact;
};

struct PsRegistrationStats {
  int64_t registrations = 0;  // successful RegisterParameterServer calls
  int64_t heartbeats = 0;     // successful PsHeartbeat calls
  int64_t jobs_released = 0;  // jobs whose shards were dropped
};

// A client of the coordinator at `address` over a channel secured as
// `security` says, that reconnects quickly when it comes back
// (NewCoordinatorChannel).
std::shared_ptr<CoordinatorClient> ConnectCoordinator(
    const std::string& address, const GrpcSecurity& security = {});

class PsRegistration {
 public:
  // `service` must outlive this object.
  PsRegistration(PsRegistrationConfig config,
                 std::shared_ptr<CoordinatorClient> client, PsService* service);
  PsRegistration(const PsRegistration&) = delete;
  PsRegistration& operator=(const PsRegistration&) = delete;
  // Stops.
  ~PsRegistration();

  // Registers, retrying failures that may pass (UNAVAILABLE,
  // DEADLINE_EXCEEDED, ...) until config.register_timeout. See "Errors".
  [[nodiscard]] absl::Status Register();
  // Starts the heartbeat thread; call once, after Register succeeded.
  // Does nothing once Stop was called.
  void StartHeartbeats();
  // Ends the heartbeat thread and any Register in progress (CANCELLED).
  // Idempotent.
  void Stop();
  // Withdraws from the coordinator (shutting down, `reason`), so that the
  // jobs with shards here fail now instead of at the lease's end; waits
  // at most config.rpc_timeout and logs the outcome. Works after Stop;
  // does nothing while unregistered.
  void Deregister(absl::string_view reason);

  // The id the coordinator gave (empty while unregistered).
  std::string ps_id() const;
  PsRegistrationStats stats() const;

 private:
  // One RegisterParameterServer call; on success records the id.
  [[nodiscard]] absl::Status RegisterOnce(absl::Duration timeout);
  // One PsHeartbeat call with every shard's counters; releases the jobs
  // the reply names.
  [[nodiscard]] absl::Status HeartbeatOnce();
  void Loop();
  // Sleeps `d` or until Stop; false when stopping.
  bool Sleep(absl::Duration d);
  // Logs the first failure of an outage and the recovery.
  void NoteOutcome(const absl::Status& status, absl::string_view what);
  void Log(absl::string_view line) const;

  const PsRegistrationConfig config_;
  const std::shared_ptr<CoordinatorClient> client_;
  PsService* const service_;
  // The call in flight, which Stop cancels.
  CancellableCalls calls_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string ps_id_ ABSL_GUARDED_BY(mu_);
  std::string credential_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_ ABSL_GUARDED_BY(mu_);
  PsRegistrationStats stats_ ABSL_GUARDED_BY(mu_);
  bool outage_ = false;  // the loop's (or Register's) thread only
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_REGISTRATION_H_
