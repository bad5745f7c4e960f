#include "server/coordinator/sqlite_state_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/coordinator/sqlite_db.h"

namespace gradsync {
namespace {

constexpr int kLayoutVersion = 1;

constexpr absl::string_view kSchema = R"sql(
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
  SqliteStateStore(std::string path, sqlite3* db)
      : path_(std::move(path)), db_(DescribePath(path_), db) {}

  // Pragmas, the exclusive lock and the tables.
  [[nodiscard]] absl::Status Init() {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(db_.Exec("PRAGMA locking_mode=EXCLUSIVE"));
    RETURN_IF_ERROR(db_.Exec("PRAGMA journal_mode=WAL"));
    RETURN_IF_ERROR(db_.Exec("PRAGMA synchronous=NORMAL"));
    RETURN_IF_ERROR(db_.Exec("BEGIN IMMEDIATE"));
    absl::Status status = db_.Exec(kSchema);
    int64_t version = -1;
    if (status.ok()) status = db_.Int("PRAGMA user_version", &version);
    if (status.ok() && version == 0) {
      status = db_.Exec(absl::StrCat("PRAGMA user_version=", kLayoutVersion));
    } else if (status.ok() && version != kLayoutVersion) {
      status = absl::FailedPreconditionError(
          absl::StrCat("its layout is version ", version,
                       "; this coordinator reads ", kLayoutVersion));
    }
    if (!status.ok()) {
      (void)db_.Exec("ROLLBACK");
      return status;
    }
    return db_.Exec("COMMIT");
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
    if (!status.ok()) (void)db_.Exec("ROLLBACK");
    return status;
  }

  std::string Describe() const override { return DescribePath(path_); }

 private:
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
  absl::Mutex mu_;
  SqliteDb db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(
    const std::string& path) {
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
  auto store = std::make_unique<SqliteStateStore>(path, db);
  if (absl::Status status = store->Init(); !status.ok()) {
    return absl::UnavailableError(absl::StrCat(
        status.message(),
        "; is another gradsync-coordinator using it? One database serves "
        "one coordinator"));
  }
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace gradsync
