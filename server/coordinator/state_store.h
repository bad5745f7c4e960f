// StateStore: where the coordinator keeps the state that must survive its
// own restart (proto/coordinator_state.proto): its counters and shard key,
// its workers and parameter servers with their credentials and mailboxes,
// its jobs with their step metrics, and the rendezvous store's keys. The
// coordinator's logic stays free of SQL: it saves through this interface
// (state_saver.h turns its records into StateChanges) and loads once, at
// start. Two implementations: SQLite (sqlite_state_store.h) for the daemon,
// and memory (NewMemoryStateStore) for tests, where one store outlives a
// CoordinatorService to stand for the database across a restart.
//
//   std::shared_ptr<StateStore> store = NewMemoryStateStore();
//   StateChange change;
//   change.jobs.push_back(saved_job);
//   RETURN_IF_ERROR(store->Apply(change));      // all of it, or nothing
//   ASSIGN_OR_RETURN(SavedState state, store->Load());
//
// Threading: implementations are thread-safe.
#ifndef GRADSYNC_SERVER_COORDINATOR_STATE_STORE_H_
#define GRADSYNC_SERVER_COORDINATOR_STATE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/coordinator.pb.h"
#include "proto/coordinator_state.pb.h"

namespace gradsync {

// Everything saved, as Load returns it. A new store has no meta (0
// counters, no shard key, incarnation 0) and no records.
struct SavedState {
  SavedMeta meta;
  std::vector<SavedWorker> workers;  // by number
  std::vector<SavedServer> servers;  // by number
  std::vector<SavedJob> jobs;        // by number
  // Each job's step metrics in arrival order, by job id.
  std::map<std::string, std::vector<StepMetrics>> metrics;
  std::vector<std::pair<std::string, std::string>> keys;  // by key
};

// One atomic change: Apply makes all of it durable or none of it.
struct StateChange {
  // Step metrics of one job, to be saved at positions first_index,
  // first_index + 1, ... of its arrival order.
  struct Metrics {
    std::string job_id;
    int64_t first_index = 0;
    std::vector<StepMetrics> steps;
  };

  std::optional<SavedMeta> meta;
  std::vector<SavedWorker> workers;       // added or replaced, by id
  std::vector<SavedServer> servers;       // added or replaced, by id
  std::vector<SavedJob> jobs;             // added or replaced, by id
  std::vector<std::string> dropped_jobs;  // removed with their metrics
  std::vector<Metrics> metrics;
  // Applied in this order: prefixes erased first, then keys set.
  std::vector<std::string> erased_key_prefixes;
  std::vector<std::pair<std::string, std::string>> set_keys;

  bool empty() const {
    return !meta.has_value() && workers.empty() && servers.empty() &&
           jobs.empty() && dropped_jobs.empty() && metrics.empty() &&
           erased_key_prefixes.empty() && set_keys.empty();
  }
};

class StateStore {
 public:
  virtual ~StateStore() = default;

  // Everything applied so far.
  [[nodiscard]] virtual absl::StatusOr<SavedState> Load() = 0;

  // Applies `change` atomically; an error leaves the store as it was.
  [[nodiscard]] virtual absl::Status Apply(const StateChange& change) = 0;

  // Where the state lives, for log lines: "state database /var/lib/...".
  virtual std::string Describe() const = 0;
};

// A store in memory: it survives a CoordinatorService that shares it, not
// the process.
std::shared_ptr<StateStore> NewMemoryStateStore();

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_STATE_STORE_H_
