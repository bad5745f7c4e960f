// CoordinatorState: what the coordinator's parts (coordinator_service.h's
// facade, JobLifecycle, JobRendezvous, JobProgress) share under one mutex:
// the worker and parameter-server registries, the job table and the
// rendezvous store, with the helpers every part uses (the wait that
// blocking calls make, the job lookup, the event log).
//
// Locking: `mu` guards the registries and the job table; the store has
// its own lock, taken after mu (never the other way round), and nothing
// blocks on the store with mu held.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_STATE_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_STATE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/memory_store.h"
#include "proto/coordinator_state.pb.h"
#include "server/coordinator/coordinator_config.h"
#include "server/coordinator/job.h"
#include "server/coordinator/ps_registry.h"
#include "server/coordinator/state_saver.h"
#include "server/coordinator/worker_registry.h"
#include "study/alpha_beta/sync_model.h"

namespace gradsync {

// Polled by blocking calls; returning true abandons the wait (CANCELLED).
using CancelledFn = absl::FunctionRef<bool()>;
inline bool NeverCancelled() { return false; }

// The store key prefix of `job_id`'s generation `generation`:
// "job/<id>/gen/<g>/".
std::string JobStorePrefix(absl::string_view job_id, int64_t generation);

// The job-store key of runtime switch request `epoch`: "switch/<epoch>".
std::string SwitchDirectiveKey(int64_t epoch);

struct CoordinatorState {
  // `saved`: the meta of the state store (state_saver.h); its shard key is
  // kept (a new one when empty) and its incarnation counts this start.
  CoordinatorState(CoordinatorConfig coordinator_config,
                   const SavedMeta& saved);

  absl::Time Now() const { return config.clock(); }

  // Waits on mu until `ready()`, `deadline`, `cancelled()` or shutdown,
  // checking the last two every config.wait_slice. OK when ready;
  // DEADLINE_EXCEEDED (generic message; callers say what was missing),
  // CANCELLED or UNAVAILABLE otherwise.
  [[nodiscard]] absl::Status AwaitLocked(absl::FunctionRef<bool()> ready,
                                         absl::Time deadline,
                                         CancelledFn cancelled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // NOT_FOUND naming `job_id` when unknown.
  [[nodiscard]] absl::StatusOr<Job*> FindJobLocked(
      absl::string_view job_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  void LogLocked(absl::string_view line) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Saves what changed (StateSaver::SaveChanges) before the caller answers.
  // A failure is logged (and its recovery), not returned: the change is in
  // effect, and the next save tries again.
  void SaveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // The counters and keys to save.
  SavedMeta MetaLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  const CoordinatorConfig config;
  // Random for each state (each run without a state store): parameter
  // servers get it at registration, a job's workers get
  // PsTokenForJob(shard_key, job) with their assignment (security/secret.h).
  const std::string shard_key;
  // How many coordinators started on this state, this one included (1
  // without a state store).
  const int64_t incarnation;
  MemoryStore store;

  mutable absl::Mutex mu;
  WorkerRegistry workers ABSL_GUARDED_BY(mu);
  PsRegistry servers ABSL_GUARDED_BY(mu);
  JobTable jobs ABSL_GUARDED_BY(mu);
  StateSaver saver ABSL_GUARDED_BY(mu);
  // The links the alpha-beta model assumes (--mode auto): the config's
  // until SetLinkFacts replaces them (`links probe`, `lab set-link`), and
  // where they came from. Saved: a restarted coordinator keeps them
  // unless its own --link-gbps is given.
  LinkModel links ABSL_GUARDED_BY(mu);
  // Where the cluster reaches this coordinator (its --advertise, or the
  // bound address made reachable): CoordinatorService::SetAdvertisedAddress.
  std::string advertised_address ABSL_GUARDED_BY(mu);
  std::string links_source ABSL_GUARDED_BY(mu);
  bool save_failing ABSL_GUARDED_BY(mu) = false;
  bool shutting_down ABSL_GUARDED_BY(mu) = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_STATE_H_
