#include "server/coordinator/sqlite_state_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/coordinator/sqlite_db.h"
#include "server/coordinator/state_db_files.h"

namespace gradsync {
namespace {

// Layout 2 added the header row; a layout-1 database is upgraded in place.
constexpr int kLayoutVersion = 2;
constexpr int kLayoutBeforeGenerations = 1;
// PRAGMA application_id (the file header's bytes 68-71): "GSDB".
constexpr int64_t kApplicationId = 0x47534442;
// The coordinator checkpoints, and raises the generation, once its log
// holds this many pages (SQLite's own default for its automatic ones).
constexpr int kCheckpointPages = 1000;

constexpr absl::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS header (id INTEGER PRIMARY KEY CHECK (id = 1),
                                   format INTEGER NOT NULL,
                                   generation INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1),
                                 record BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS workers (id TEXT PRIMARY KEY,
                                    number INTEGER NOT NULL,
                                    record BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS servers (id TEXT PRIMARY KEY,
                                    number INTEGER NOT NULL,
                                    record BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY,
                                 number INTEGER NOT NULL,
                                 record BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS metrics (job TEXT NOT NULL, idx INTEGER NOT NULL,
                                    record BLOB NOT NULL,
                                    PRIMARY KEY (job, idx));
CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, value BLOB NOT NULL);
)sql";

class SqliteStateStore : public StateStore {
 public:
  SqliteStateStore(std::string path, std::string sidecar, sqlite3* db)
      : path_(std::move(path)),
        sidecar_(std::move(sidecar)),
        db_(DescribePath(path_), db) {}

  // Pragmas, the exclusive lock, PRAGMA quick_check, and what the database
  // holds, for the checks of state_db_files.h. Writes nothing to an
  // existing database. FAILED_PRECONDITION for another program's database
  // or another layout, DATA_LOSS for a damaged one, UNAVAILABLE when it
  // cannot be read or is locked.
  [[nodiscard]] absl::StatusOr<StateDbContents> Init() {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(db_.Exec("PRAGMA locking_mode=EXCLUSIVE"));
    RETURN_IF_ERROR(db_.Exec("PRAGMA journal_mode=WAL"));
    RETURN_IF_ERROR(db_.Exec("PRAGMA synchronous=NORMAL"));
    // Replaces SQLite's automatic checkpoints: the coordinator makes its
    // own, each raising the generation (AdvanceGenerationLocked).
    sqlite3_wal_hook(db_.get(), &SqliteStateStore::OnCommit, this);
    RETURN_IF_ERROR(QuickCheckLocked());
    RETURN_IF_ERROR(db_.Exec("BEGIN"));
    StateDbContents contents;
    const absl::Status status = ReadContentsLocked(&contents);
    (void)db_.Exec(status.ok() ? "COMMIT" : "ROLLBACK");
    if (!status.ok()) return status;
    return contents;
  }

  // Makes the close leave the file and its log as they are: SQLite would
  // otherwise copy the log into the file and delete it. For a refused
  // database, which the operator may still restore or take.
  void LeaveFilesAsTheyAre() {
    absl::MutexLock lock(&mu_);
    sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }

  // Creates or upgrades the tables, then starts the generation after
  // `generation`. `write_sidecar_first`: there is no sidecar yet, so one
  // holding `generation` is written first, lest a crash leave a header
  // row without a sidecar.
  [[nodiscard]] absl::Status Start(int64_t generation,
                                   bool write_sidecar_first) {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(db_.Exec("BEGIN IMMEDIATE"));
    absl::Status status = db_.Exec(kSchema);
    if (status.ok()) {
      status =
          db_.Exec(absl::StrCat("PRAGMA user_version=", kLayoutVersion,
                                "; PRAGMA application_id=", kApplicationId));
    }
    if (status.ok()) status = db_.Exec("COMMIT");
    if (!status.ok()) {
      (void)db_.Exec("ROLLBACK");
      return status;
    }
    generation_ = generation;
    if (write_sidecar_first) {
      RETURN_IF_ERROR(WriteStateDbGeneration(sidecar_, generation));
    }
    return AdvanceGenerationLocked();
  }

  [[nodiscard]] absl::StatusOr<SavedState> Load() override {
    absl::MutexLock lock(&mu_);
    SavedState state;
    RETURN_IF_ERROR(db_.ForEach("SELECT record FROM meta WHERE id = 1",
                                [&](sqlite3_stmt* s) {
                                  return ParseColumn(s, 0, &state.meta, "meta");
                                }));
    RETURN_IF_ERROR(db_.ForEach(
        "SELECT record FROM workers ORDER BY number", [&](sqlite3_stmt* s) {
          return ParseColumn(s, 0, &state.workers.emplace_back(), "worker");
        }));
    RETURN_IF_ERROR(db_.ForEach(
        "SELECT record FROM servers ORDER BY number", [&](sqlite3_stmt* s) {
          return ParseColumn(s, 0, &state.servers.emplace_back(), "server");
        }));
    RETURN_IF_ERROR(db_.ForEach(
        "SELECT record FROM jobs ORDER BY number", [&](sqlite3_stmt* s) {
          return ParseColumn(s, 0, &state.jobs.emplace_back(), "job");
        }));
    RETURN_IF_ERROR(db_.ForEach(
        "SELECT job, record FROM metrics ORDER BY job, idx",
        [&](sqlite3_stmt* s) {
          std::string job = SqliteDb::Blob(s, 0);
          return ParseColumn(s, 1, &state.metrics[job].emplace_back(),
                             "step metric");
        }));
    RETURN_IF_ERROR(db_.ForEach(
        "SELECT key, value FROM keys ORDER BY key", [&](sqlite3_stmt* s) {
          state.keys.emplace_back(SqliteDb::Blob(s, 0), SqliteDb::Blob(s, 1));
          return absl::OkStatus();
        }));
    return state;
  }

  [[nodiscard]] absl::Status Apply(const StateChange& change) override {
    if (change.empty()) return absl::OkStatus();
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(db_.Exec("BEGIN IMMEDIATE"));
    absl::Status status = ApplyLocked(change);
    if (status.ok()) status = db_.Exec("COMMIT");
    if (!status.ok()) {
      (void)db_.Exec("ROLLBACK");
      return status;
    }
    if (wal_pages_ < kCheckpointPages) return absl::OkStatus();
    return Annotate(AdvanceGenerationLocked(),
                    "the change is saved, but the checkpoint after it failed");
  }

  std::string Describe() const override { return DescribePath(path_); }

 private:
  // The write-ahead log hook: SQLite calls it after each commit, inside
  // the call that committed (so with mu_ held), with the pages in the log.
  static int OnCommit(void* self, sqlite3*, const char*,
                      int pages) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<SqliteStateStore*>(self)->wal_pages_ = pages;
    return SQLITE_OK;
  }

  // The generation protocol (state_db_files.h): copies the log into the
  // file, commits generation_ + 1 with the log synced to disk, then
  // writes it to the sidecar. From then until the next checkpoint or a
  // clean close, the file without its log is older than the sidecar.
  [[nodiscard]] absl::Status AdvanceGenerationLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int log_frames = 0, copied_frames = 0;
    RETURN_IF_ERROR(db_.Check(
        sqlite3_wal_checkpoint_v2(db_.get(), "main", SQLITE_CHECKPOINT_TRUNCATE,
                                  &log_frames, &copied_frames),
        "PRAGMA wal_checkpoint(TRUNCATE)"));
    const int64_t next = generation_ + 1;
    RETURN_IF_ERROR(db_.Exec("PRAGMA synchronous=FULL"));
    absl::Status status = db_.Exec("BEGIN IMMEDIATE");
    if (status.ok()) {
      status = db_.Run(
          "INSERT OR REPLACE INTO header (id, format, generation) "
          "VALUES (1, ?1, ?2)",
          {"", ""}, {{1, kLayoutVersion}, {2, next}});
      if (status.ok()) status = db_.Exec("COMMIT");
      if (!status.ok()) (void)db_.Exec("ROLLBACK");
    }
    const absl::Status normal = db_.Exec("PRAGMA synchronous=NORMAL");
    RETURN_IF_ERROR(status);
    RETURN_IF_ERROR(normal);
    generation_ = next;
    return WriteStateDbGeneration(sidecar_, next);
  }

  // DATA_LOSS naming the file when PRAGMA quick_check finds damage.
  [[nodiscard]] absl::Status QuickCheckLocked()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<std::string> findings;
    const absl::Status status =
        db_.ForEach("PRAGMA quick_check(5)", [&](sqlite3_stmt* s) {
          findings.push_back(SqliteDb::Blob(s, 0));
          return absl::OkStatus();
        });
    if (status.ok() && findings == std::vector<std::string>{"ok"}) {
      return absl::OkStatus();
    }
    const int code = sqlite3_errcode(db_.get());
    if (!status.ok() && code != SQLITE_CORRUPT && code != SQLITE_NOTADB) {
      return status;  // not damage: busy, out of memory, ...
    }
    return absl::DataLossError(absl::StrCat(
        "the state database ", path_, " is damaged (PRAGMA quick_check: ",
        status.ok() ? absl::StrJoin(findings, "; ")
                    : std::string(status.message()),
        "); restore it, its ", kStateDbWalSuffix, " and its ",
        kStateDbGenerationSuffix,
        " from a backup taken together, or recover what can be with "
        "`sqlite3 ",
        path_, " .recover`"));
  }

  // Reads the layout, the header row and whether any state is saved.
  [[nodiscard]] absl::Status ReadContentsLocked(StateDbContents* contents)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int64_t application_id = 0, version = 0, tables = 0, header_tables = 0;
    RETURN_IF_ERROR(db_.Int("PRAGMA application_id", &application_id));
    RETURN_IF_ERROR(db_.Int("PRAGMA user_version", &version));
    RETURN_IF_ERROR(db_.Int("SELECT count(*) FROM sqlite_master", &tables));
    RETURN_IF_ERROR(
        db_.Int("SELECT count(*) FROM sqlite_master WHERE name = 'header'",
                &header_tables));
    if ((application_id != 0 && application_id != kApplicationId) ||
        (version == 0 && tables > 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the state database ", path_,
          " is not a gradsync state database (its application_id is ",
          application_id, ", its user_version ", version,
          "): another program's? Give --state-db a file of its own"));
    }
    if (version != 0 && version != kLayoutBeforeGenerations &&
        version != kLayoutVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the state database ", path_, " has layout version ", version,
          "; this coordinator reads ", kLayoutBeforeGenerations, " and ",
          kLayoutVersion, " (was it written by a newer gradsync?)"));
    }
    contents->before_generations = version == kLayoutBeforeGenerations;
    if (version == 0) return absl::OkStatus();  // new: nothing saved
    int64_t format = version;
    if (header_tables > 0) {
      RETURN_IF_ERROR(
          db_.ForEach("SELECT format, generation FROM header WHERE id = 1",
                      [&](sqlite3_stmt* s) {
                        contents->has_header = true;
                        format = sqlite3_column_int64(s, 0);
                        contents->generation = sqlite3_column_int64(s, 1);
                        return absl::OkStatus();
                      }));
    }
    if (format != version) {
      return absl::DataLossError(
          absl::StrCat("the state database ", path_, " has layout version ",
                       version, " but its header row says ", format,
                       "; it is damaged or was written by another program"));
    }
    int64_t has_state = 0;
    RETURN_IF_ERROR(db_.Int(
        "SELECT EXISTS (SELECT 1 FROM meta) OR EXISTS (SELECT 1 FROM workers) "
        "OR EXISTS (SELECT 1 FROM servers) OR EXISTS (SELECT 1 FROM jobs)",
        &has_state));
    contents->has_state = has_state != 0;
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status ApplyLocked(const StateChange& change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (change.meta.has_value()) {
      RETURN_IF_ERROR(
          db_.Run("INSERT OR REPLACE INTO meta (id, record) VALUES (1, ?1)",
                  {change.meta->SerializeAsString()}, {}));
    }
    for (const SavedWorker& w : change.workers) {
      RETURN_IF_ERROR(
          db_.Run("INSERT OR REPLACE INTO workers (id, number, record) "
                  "VALUES (?1, ?2, ?3)",
                  {w.id(), "", w.SerializeAsString()}, {{2, w.number()}}));
    }
    for (const SavedServer& s : change.servers) {
      RETURN_IF_ERROR(
          db_.Run("INSERT OR REPLACE INTO servers (id, number, record) "
                  "VALUES (?1, ?2, ?3)",
                  {s.id(), "", s.SerializeAsString()}, {{2, s.number()}}));
    }
    for (const SavedJob& j : change.jobs) {
      RETURN_IF_ERROR(
          db_.Run("INSERT OR REPLACE INTO jobs (id, number, record) "
                  "VALUES (?1, ?2, ?3)",
                  {j.id(), "", j.SerializeAsString()}, {{2, j.number()}}));
    }
    for (const std::string& id : change.dropped_jobs) {
      RETURN_IF_ERROR(db_.Run("DELETE FROM jobs WHERE id = ?1", {id}, {}));
      RETURN_IF_ERROR(db_.Run("DELETE FROM metrics WHERE job = ?1", {id}, {}));
    }
    for (const StateChange::Metrics& m : change.metrics) {
      for (size_t i = 0; i < m.steps.size(); ++i) {
        RETURN_IF_ERROR(
            db_.Run("INSERT OR REPLACE INTO metrics (job, idx, record) "
                    "VALUES (?1, ?2, ?3)",
                    {m.job_id, "", m.steps[i].SerializeAsString()},
                    {{2, m.first_index + static_cast<int64_t>(i)}}));
      }
    }
    for (const std::string& prefix : change.erased_key_prefixes) {
      // Keys from prefix up to (not including) prefix + U+FFFF's bytes:
      // every key that starts with prefix, without LIKE's escaping.
      RETURN_IF_ERROR(db_.Run("DELETE FROM keys WHERE key >= ?1 AND key < ?2",
                              {prefix, absl::StrCat(prefix, "\xef\xbf\xbf")},
                              {}));
    }
    for (const auto& [key, value] : change.set_keys) {
      RETURN_IF_ERROR(
          db_.Run("INSERT OR REPLACE INTO keys (key, value) VALUES (?1, ?2)",
                  {key, value}, {}));
    }
    return absl::OkStatus();
  }

  template <typename Message>
  [[nodiscard]] absl::Status ParseColumn(sqlite3_stmt* s, int column,
                                         Message* out,
                                         absl::string_view what) const {
    if (out->ParseFromString(SqliteDb::Blob(s, column)))
      return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(
        Describe(), ": a ", what,
        " record does not parse; the database is damaged or was written by "
        "another program"));
  }

  static std::string DescribePath(const std::string& path) {
    return absl::StrCat("state database ", path);
  }

  const std::string path_;
  const std::string sidecar_;
  absl::Mutex mu_;
  SqliteDb db_ ABSL_GUARDED_BY(mu_);
  // The generation in the header row.
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Pages in the write-ahead log after the last commit (OnCommit).
  int wal_pages_ ABSL_GUARDED_BY(mu_) = 0;
};

void Log(const SqliteStateStoreOptions& options, absl::string_view line) {
  if (options.log) options.log(line);
}

// Logs what is wrong (a refusal reads "what is wrong; what to do").
void LogAccepted(const SqliteStateStoreOptions& options,
                 const absl::Status& refusal) {
  const absl::string_view message = refusal.message();
  Log(options,
      absl::StrCat("starting anyway, as --accept-state-rollback asks: ",
                   message.substr(0, message.find("; "))));
}

// Moves the log at `wal` to `wal`.rolled-back, where SQLite, which deletes
// a log beside an empty database, leaves it alone.
[[nodiscard]] absl::StatusOr<std::string> SetAsideLog(const std::string& wal) {
  std::string moved_to = absl::StrCat(wal, kStateDbSetAsideSuffix);
  if (std::rename(wal.c_str(), moved_to.c_str()) == 0) return moved_to;
  return absl::UnavailableError(absl::StrCat("cannot move ", wal, " to ",
                                             moved_to, ": ", strerror(errno)));
}

// The checks once SQLite has the database open (Init, then
// CheckStateDbGeneration unless a refusal was `accepted` already), then
// the start of a new generation.
[[nodiscard]] absl::Status CheckAndStart(
    SqliteStateStore& store, const StateDbFiles& files, bool accepted,
    const SqliteStateStoreOptions& options) {
  absl::StatusOr<StateDbContents> contents = store.Init();
  if (absl::IsUnavailable(contents.status())) {
    return absl::UnavailableError(absl::StrCat(
        contents.status().message(),
        "; is another gradsync-coordinator using it? One database serves "
        "one coordinator"));
  }
  if (!contents.ok()) return contents.status();
  if (!accepted) {
    // An accepted refusal before the open takes the database as it is.
    if (absl::Status refusal = CheckStateDbGeneration(files, *contents);
        !refusal.ok()) {
      if (!options.accept_rollback) return refusal;
      LogAccepted(options, refusal);
      accepted = true;
    }
  }
  if (options.accept_rollback && !accepted) {
    Log(options,
        absl::StrCat("--accept-state-rollback: the state database ", files.db,
                     " passed every check, so the flag changed nothing; "
                     "remove it, so that a later rollback is refused rather "
                     "than taken"));
  }
  return store.Start(
      std::max(contents->generation, files.generation.value_or(0)),
      !files.generation.has_value());
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(
    const std::string& path, const SqliteStateStoreOptions& options) {
  // Before SQLite touches the files: it deletes a log beside an empty
  // database.
  ASSIGN_OR_RETURN(StateDbFiles files, InspectStateDbFiles(path));
  bool accepted = false;
  if (absl::Status refusal = CheckStateDbBeforeOpen(files); !refusal.ok()) {
    if (!options.accept_rollback) return refusal;
    LogAccepted(options, refusal);
    accepted = true;
    if (files.wal_bytes > 0 && files.db_bytes <= 0) {
      ASSIGN_OR_RETURN(const std::string moved_to, SetAsideLog(files.wal));
      Log(options, absl::StrCat("moved the log ", files.wal, " to ", moved_to));
    }
  }

  // The database holds the daemons' credentials, the jobs' secrets and the
  // shard key: readable by the coordinator's user only. SQLite gives its
  // log files the database file's mode.
  const int fd =
      open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot open the state database ", path, ": ", strerror(errno),
        errno == ELOOP ? " (it is a symbolic link)" : "",
        "; check that its directory exists and is writable, and that the "
        "path is not a symbolic link"));
  }
  struct stat st;
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular && (st.st_mode & 077) != 0) (void)fchmod(fd, 0600);
  close(fd);
  if (!regular) {
    return absl::UnavailableError(
        absl::StrCat("the state database ", path, " is not a regular file"));
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX,
                      nullptr);
  if (rc != SQLITE_OK) {
    const std::string message =
        db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::UnavailableError(absl::StrCat(
        "cannot open the state database ", path, ": ", message,
        "; check that its directory exists and is writable, and that the "
        "path is not a symbolic link"));
  }
  sqlite3_busy_timeout(db, 2000);
  auto store = std::make_unique<SqliteStateStore>(path, files.sidecar, db);
  if (absl::Status status = CheckAndStart(*store, files, accepted, options);
      !status.ok()) {
    store->LeaveFilesAsTheyAre();
    store.reset();
    // SQLite made an empty log when it read the file: none was there.
    struct stat wal;
    if (!files.wal_exists && lstat(files.wal.c_str(), &wal) == 0 &&
        S_ISREG(wal.st_mode) && wal.st_size == 0) {
      (void)unlink(files.wal.c_str());
    }
    return status;
  }
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace gradsync
