// CoordinatorConfig: everything the coordinator's logic reads, passed in by
// main (from its flags) or by tests. Nothing below server/coordinator reads
// flags or the environment.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_CONFIG_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_CONFIG_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/coordinator/state_store.h"

namespace gradsync {

struct CoordinatorConfig {
  // A worker that has not heartbeated for this long is declared lost and
  // its jobs fail.
  absl::Duration lease = absl::Seconds(5);
  // How often workers are told to heartbeat (RegisterWorkerResponse).
  absl::Duration heartbeat_interval = absl::Milliseconds(500);
  // How often the background lease check runs (StartLeaseChecks).
  absl::Duration lease_check_interval = absl::Milliseconds(250);
  // How often a blocked call (store get/wait, barrier, long-poll, watch)
  // looks for its job ending, its caller going away or shutdown.
  absl::Duration wait_slice = absl::Milliseconds(100);
  // Ended jobs kept for status and metrics queries; older ones are dropped.
  int retained_ended_jobs = 100;
  // The clock of leases and of the times reported in JobStatus and
  // WorkerInfo. Empty: absl::Now. Tests pass a fake one. Deadlines of
  // blocking calls are always in real time (absl::Now).
  std::function<absl::Time()> clock;
  // The links of the cluster, for the alpha-beta model behind `--mode
  // auto`'s reasons (study/alpha_beta/sync_model.h): B, each host's link in
  // bytes/s of payload (0: unknown, the model stays silent), and alpha, the
  // latency per message.
  double link_bandwidth_Bps = 0;
  double link_alpha_s = 0;
  // Where jobs may keep checkpoints (security/path_roots.h, NormalizeRoot'ed):
  // a spec whose checkpoint.directory or checkpoint.resumeFrom lies
  // elsewhere is refused at submit. Empty: any path.
  std::vector<std::string> checkpoint_roots;
  // The users' token (--user-token-file): every user RPC (submit, status,
  // list, cancel, switch, watch, metrics, workers) must present it
  // (CoordinatorService::CheckUser). Empty: users are not authenticated.
  std::string user_token;
  // Who may register as a worker or parameter server (daemon_admission.h):
  // with `require_node_certificate` (the coordinator serves mTLS) only a
  // caller presenting the cluster's node certificate, not the users';
  // with a `join_token` (--join-token-file) only one presenting it. Both
  // unset: anyone who reaches the port (the coordinator warns at start).
  bool require_node_certificate = false;
  std::string join_token;
  // Where the coordinator keeps its state so that it survives a restart
  // (state_store.h; the daemon's --state-db). Create loads what it holds:
  // the daemons, the jobs and their metrics, the id counters. Null: the
  // state lives and dies with the process.
  std::shared_ptr<StateStore> state_store;
  // Receives one line per notable event (worker registered or lost, job
  // state changes). Empty: events are not reported. Called with the
  // service's lock held: it must not call back into the service.
  std::function<void(absl::string_view)> event_log;
};

// OK, or INVALID_ARGUMENT naming the first bad field: durations must be
// positive, heartbeat_interval shorter than lease, retained_ended_jobs >= 0.
[[nodiscard]] absl::Status ValidateCoordinatorConfig(
    const CoordinatorConfig& config);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_CONFIG_H_
