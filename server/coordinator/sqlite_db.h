// SqliteDb: one SQLite connection with the few calls the coordinator's
// state database makes (sqlite_state_store.h): run a script, run one
// statement with parameters, read rows; every error an absl::Status that
// names the database.
//
//   SqliteDb db("state database /var/lib/gradsync/coordinator.db", handle);
//   RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
//   RETURN_IF_ERROR(db.Run("DELETE FROM jobs WHERE id = ?1", {id}, {}));
//   int64_t count = 0;
//   RETURN_IF_ERROR(db.Int("SELECT count(*) FROM jobs", &count));
//
// Errors: UNAVAILABLE "<description>: <SQLite's message> (in <statement>)".
// Thread-compatible: its owner guards it (SQLite's own mutex aside).
#ifndef GRADSYNC_SERVER_COORDINATOR_SQLITE_DB_H_
#define GRADSYNC_SERVER_COORDINATOR_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

class SqliteDb {
 public:
  // Takes `db`, an open connection, and closes it when destroyed.
  // `description` starts every error message.
  SqliteDb(std::string description, sqlite3* db)
      : description_(std::move(description)), db_(db) {}
  ~SqliteDb() { sqlite3_close_v2(db_); }
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& description() const { return description_; }

  // Runs `sql`, one or more statements without parameters.
  [[nodiscard]] absl::Status Exec(absl::string_view sql);

  // Runs one statement with text/blob parameters 1..n from `values` (an
  // empty string at the index of an integer parameter is skipped) and
  // integer parameters from `ints` (index, value).
  [[nodiscard]] absl::Status Run(
      absl::string_view sql, const std::vector<std::string>& values,
      const std::vector<std::pair<int, int64_t>>& ints);

  // Calls `row(stmt)` for each row of `sql`; its first error ends it.
  template <typename RowFn>
  [[nodiscard]] absl::Status ForEach(absl::string_view sql, RowFn row) {
    Statement stmt;
    if (absl::Status status = Prepare(sql, &stmt); !status.ok()) {
      return status;
    }
    for (;;) {
      const int rc = sqlite3_step(stmt.get());
      if (rc == SQLITE_DONE) return absl::OkStatus();
      if (rc != SQLITE_ROW) return Check(rc, sql);
      if (absl::Status status = row(stmt.get()); !status.ok()) return status;
    }
  }

  // The first column of the last row of `sql`, an integer; `*value` is
  // left as it was when there is no row.
  [[nodiscard]] absl::Status Int(absl::string_view sql, int64_t* value);

  // OK for SQLITE_OK, _DONE and _ROW; otherwise UNAVAILABLE with the
  // connection's message and the first line of `sql`.
  [[nodiscard]] absl::Status Check(int rc, absl::string_view sql) const;

  // A column's bytes (text or blob); empty for NULL.
  static std::string Blob(sqlite3_stmt* s, int column);

 private:
  // A prepared statement, finalized when it goes out of scope.
  class Statement {
   public:
    Statement() = default;
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    sqlite3_stmt** out() { return &stmt_; }
    sqlite3_stmt* get() const { return stmt_; }

   private:
    sqlite3_stmt* stmt_ = nullptr;
  };

  [[nodiscard]] absl::Status Prepare(absl::string_view sql, Statement* stmt);

  const std::string description_;
  sqlite3* const db_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_SQLITE_DB_H_
