// StateSaver: turns the coordinator's records into StateChanges for its
// StateStore (state_store.h), so that the coordinator survives its own
// restart; and the conversions between the registries' records and the
// saved ones.
//
// The coordinator's facade calls SaveChanges at the end of every call that
// may change its state, before it answers: the saver compares each worker,
// server and job record with the bytes it saved last, and applies only the
// differences (with the job's new step metrics and the rendezvous keys
// set or erased since) as one atomic change. What does not survive a
// restart, on purpose: leases (every live daemon gets a fresh one on
// load), barriers (a job at rendezvous fails on load) and watchers.
//
//   StateSaver saver(store);           // null store: saves nothing
//   saver.SetKey("job/job-1/gen/1/tcp/addr/0", "10.0.0.1:4000");
//   RETURN_IF_ERROR(saver.SaveChanges(meta, workers, servers, jobs));
//
// Not thread-safe: CoordinatorState owns one and guards it with its mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_STATE_SAVER_H_
#define GRADSYNC_SERVER_COORDINATOR_STATE_SAVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "proto/coordinator_state.pb.h"
#include "server/coordinator/job.h"
#include "server/coordinator/ps_registry.h"
#include "server/coordinator/state_store.h"
#include "server/coordinator/worker_registry.h"

namespace gradsync {

class StateSaver {
 public:
  explicit StateSaver(std::shared_ptr<StateStore> store)
      : store_(std::move(store)) {}
  StateSaver(const StateSaver&) = delete;
  StateSaver& operator=(const StateSaver&) = delete;

  bool enabled() const { return store_ != nullptr; }
  // The store; null when saving is off.
  StateStore* store() const { return store_.get(); }

  // Rendezvous store changes, saved with the next SaveChanges.
  void SetKey(std::string key, std::string value);
  void ErasePrefix(std::string prefix);

  // Applies everything that changed since the last successful call as one
  // StateChange. On error nothing counts as saved: the next call tries
  // again with all of it. OK at once when saving is off.
  [[nodiscard]] absl::Status SaveChanges(const SavedMeta& meta,
                                         const WorkerRegistry& workers,
                                         const PsRegistry& servers,
                                         const JobTable& jobs);

  // Counts `state`, just loaded, as saved.
  void Remember(const SavedState& state);

 private:
  std::shared_ptr<StateStore> store_;
  StateChange keys_;  // key changes not saved yet
  std::string meta_;  // serialized, as saved last
  absl::flat_hash_map<std::string, std::string> workers_;
  absl::flat_hash_map<std::string, std::string> servers_;
  absl::flat_hash_map<std::string, std::string> jobs_;
  absl::flat_hash_map<std::string, int64_t> metrics_saved_;  // by job
};

SavedWorker SaveWorker(const WorkerRecord& worker);
// Its lease starts at `now`.
WorkerRecord RestoreWorker(const SavedWorker& saved, absl::Time now);
SavedServer SaveServer(const PsRecord& server);
PsRecord RestoreServer(const SavedServer& saved, absl::Time now);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_STATE_SAVER_H_
