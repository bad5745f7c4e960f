// The files of the coordinator's state database (--state-db FILE,
// sqlite_state_store.h) and the checks that tell the newest state from an
// older or damaged one: FILE, its write-ahead log FILE-wal, and the sidecar
// FILE.generation, which holds the database's generation.
//
// Why: SQLite commits into FILE-wal and copies the log into FILE only at
// its checkpoints, so FILE without its log is an older state that SQLite
// opens without a word (a job that SUCCEEDED came back RUNNING with half
// its step metrics); and SQLite deletes the log beside a 0-byte FILE and
// starts blank.
//
// The generation: a counter in the database's header row (with its format
// version), raised right after every checkpoint the coordinator makes (at
// each start, and each time the log has grown by about 4 MB; SQLite's own
// automatic checkpoints are off): the checkpoint copies the log into FILE,
// the new generation is committed with the log synced to disk, then
// written to the sidecar (temporary file, fsync, rename, fsync of the
// directory). So FILE and its log together always hold the sidecar's
// generation (or, after a crash between the two writes, one more), while
// FILE without the log that completes it, or any copy of both taken before
// the coordinator's last start or checkpoint, holds an older one.
//
//   ASSIGN_OR_RETURN(StateDbFiles files, InspectStateDbFiles(path));
//   RETURN_IF_ERROR(CheckStateDbBeforeOpen(files));  // before SQLite opens it
//   ... open it, read its generation ...
//   RETURN_IF_ERROR(CheckStateDbGeneration(files, contents));
//   RETURN_IF_ERROR(WriteStateDbGeneration(files.sidecar, generation));
//
// The checks return FAILED_PRECONDITION for a state the operator may
// choose to start on anyway (--accept-state-rollback), with a message that
// names the files and reads "what is wrong; what to do".
//
// Thread-compatible: plain functions of their arguments and the files.
#ifndef GRADSYNC_SERVER_COORDINATOR_STATE_DB_FILES_H_
#define GRADSYNC_SERVER_COORDINATOR_STATE_DB_FILES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// FILE + this: the write-ahead log (SQLite's name for it).
inline constexpr absl::string_view kStateDbWalSuffix = "-wal";
// FILE + this: the generation sidecar.
inline constexpr absl::string_view kStateDbGenerationSuffix = ".generation";
// FILE-wal + this: where an accepted rollback puts a log that SQLite would
// otherwise delete.
inline constexpr absl::string_view kStateDbSetAsideSuffix = ".rolled-back";

// What lies at a state database's paths before it is opened.
struct StateDbFiles {
  std::string db;       // FILE
  std::string wal;      // FILE-wal
  std::string sidecar;  // FILE.generation
  // FILE exists as a regular file (a symbolic link or another kind of file
  // is left to the open, which refuses it), and its size.
  bool db_exists = false;
  int64_t db_bytes = 0;
  // FILE-wal exists, and its size.
  bool wal_exists = false;
  int64_t wal_bytes = 0;
  // The sidecar's generation; nullopt when there is no sidecar.
  std::optional<int64_t> generation;
  // Non-empty when the sidecar exists but holds no generation: why.
  std::string sidecar_problem;
};

// What an open database holds, for CheckStateDbGeneration.
struct StateDbContents {
  // Its header row's generation; 0 when it has none.
  int64_t generation = 0;
  // A header row exists: a coordinator of this layout has started on it.
  bool has_header = false;
  // It holds saved records (counters, daemons, jobs).
  bool has_state = false;
  // Written by a coordinator from before generations (layout 1), which
  // kept no sidecar: taken as it is, once.
  bool before_generations = false;
};

// Looks at FILE, FILE-wal and FILE.generation for the database at `db`.
// UNAVAILABLE naming the file when one cannot be examined or read.
[[nodiscard]] absl::StatusOr<StateDbFiles> InspectStateDbFiles(
    const std::string& db);

// The checks that must come before SQLite opens FILE, which would delete a
// log beside an empty FILE: FAILED_PRECONDITION for an empty or missing
// FILE beside a non-empty log or beside a sidecar, and for a sidecar that
// holds no generation. OK for a new path (none of the three files) and
// for everything else.
[[nodiscard]] absl::Status CheckStateDbBeforeOpen(const StateDbFiles& files);

// The checks once the database is open: FAILED_PRECONDITION when it is
// older than its sidecar (its log missing, or an older copy), or holds a
// state with a header row but has no sidecar to compare it with.
[[nodiscard]] absl::Status CheckStateDbGeneration(
    const StateDbFiles& files, const StateDbContents& contents);

// Replaces the sidecar at `path` with one holding `generation`, durably:
// a temporary file beside it, fsync, rename over it, fsync of the
// directory. Mode 0600. UNAVAILABLE naming the file on error.
[[nodiscard]] absl::Status WriteStateDbGeneration(const std::string& path,
                                                  int64_t generation);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_STATE_DB_FILES_H_
