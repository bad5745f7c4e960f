// SqliteStateStore: the coordinator's StateStore (state_store.h) in an
// embedded SQLite database (Debian's libsqlite3-dev), the daemon's
// --state-db FILE.
//
// Durability: write-ahead logging (journal_mode=WAL). Apply is one
// transaction, committed before the coordinator acknowledges the change it
// records, so a coordinator killed at any moment (kill -9) restarts with
// every acknowledged change. synchronous=NORMAL: the log is synced at its
// checkpoints, not at each commit, so a power loss (not a process crash)
// may lose the last moments' commits; the coordinator holds its lock while
// it commits, and a sync per heartbeat would slow every call.
//
// One coordinator per database: the database is opened with an exclusive
// lock (locking_mode=EXCLUSIVE), so a second coordinator on it fails to
// start, saying so.
//
// Layout (PRAGMA user_version 1): tables meta, workers, servers, jobs
// (one binary protobuf record each, proto/coordinator_state.proto),
// metrics (job, index, StepMetrics) and keys (key, value).
//
// Threading: thread-safe (one connection behind a mutex).
#ifndef GRADSYNC_SERVER_COORDINATOR_SQLITE_STATE_STORE_H_
#define GRADSYNC_SERVER_COORDINATOR_SQLITE_STATE_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/coordinator/state_store.h"

namespace gradsync {

// Opens (creating if missing) the database at `path`, a regular file that
// is not a symbolic link. UNAVAILABLE naming the file when it cannot be
// opened, is locked by another coordinator, or is not a gradsync state
// database of this layout.
[[nodiscard]] absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(
    const std::string& path);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_SQLITE_STATE_STORE_H_
