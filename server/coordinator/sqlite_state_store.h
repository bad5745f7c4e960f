// SqliteStateStore: the coordinator's StateStore (state_store.h) in an
// embedded SQLite database (Debian's libsqlite3-dev), the daemon's
// --state-db FILE.
//
// Durability: write-ahead logging (journal_mode=WAL). Apply is one
// transaction, committed before the coordinator acknowledges the change it
// records, so a coordinator killed at any moment (kill -9) restarts with
// every acknowledged change. synchronous=NORMAL: the log is synced at its
// checkpoints (the coordinator's own, at start and each time the log holds
// 1,000 pages, about 4 MB), not at each commit, so a power loss (not a process
// crash) may lose the last moments' commits; the coordinator holds its lock
// while it commits, and a sync per heartbeat would slow every call.
//
// One coordinator per database: the database is opened with an exclusive
// lock (locking_mode=EXCLUSIVE), so a second coordinator on it fails to
// start, saying so.
//
// Checked at start, before anything is loaded: PRAGMA quick_check (a
// damaged file is DATA_LOSS), the layout, and the generation of
// state_db_files.h, which refuses a database that is an older state than
// its sidecar FILE.generation says (a file without its log FILE-wal, a
// 0-byte file beside its log, an older copy) unless the operator accepts
// the rollback (--accept-state-rollback).
//
// Layout (PRAGMA user_version 2, application_id "GSDB"): tables header
// (format version and generation, one row), meta, workers, servers, jobs
// (one binary protobuf record each, proto/coordinator_state.proto),
// metrics (job, index, StepMetrics) and keys (key, value). Layout 1, the
// same without the header, is upgraded in place.
//
// Threading: thread-safe (one connection behind a mutex).
#ifndef GRADSYNC_SERVER_COORDINATOR_SQLITE_STATE_STORE_H_
#define GRADSYNC_SERVER_COORDINATOR_SQLITE_STATE_STORE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/coordinator/state_store.h"

namespace gradsync {

struct SqliteStateStoreOptions {
  // Start on a database that the generation checks refuse (an older state
  // than its sidecar says, an empty file beside its log, no sidecar), as
  // it is; the sidecar is then written anew. Damage and another program's
  // database are refused all the same. The daemon's
  // --accept-state-rollback.
  bool accept_rollback = false;
  // Receives a line for each thing the operator should know: a refusal
  // accepted, a log set aside, the flag given for nothing. Empty: none.
  std::function<void(absl::string_view)> log;
};

// Opens (creating if missing) the database at `path`, a regular file that
// is not a symbolic link, after the checks above. Errors, each naming the
// files and what to do:
//   UNAVAILABLE          it cannot be opened, read or written, or another
//                        coordinator holds it;
//   FAILED_PRECONDITION  an older state than its sidecar says, an empty
//                        file beside its log or sidecar, no sidecar beside
//                        a saved state (unless accept_rollback); another
//                        program's database; a layout of a newer gradsync;
//   DATA_LOSS            PRAGMA quick_check finds it damaged.
[[nodiscard]] absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(
    const std::string& path, const SqliteStateStoreOptions& options = {});

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_SQLITE_STATE_STORE_H_
