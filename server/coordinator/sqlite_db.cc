#include "server/coordinator/sqlite_db.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {

absl::Status SqliteDb::Exec(absl::string_view sql) {
  char* error = nullptr;
  const int rc =
      sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(description_, ": ",
                   message.empty() ? sqlite3_errstr(rc) : message.c_str()));
}

absl::Status SqliteDb::Run(absl::string_view sql,
                           const std::vector<std::string>& values,
                           const std::vector<std::pair<int, int64_t>>& ints) {
  Statement stmt;
  RETURN_IF_ERROR(Prepare(sql, &stmt));
  for (size_t i = 0; i < values.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    bool is_int = false;
    for (const auto& [n, v] : ints) is_int = is_int || n == index;
    if (is_int) continue;
    RETURN_IF_ERROR(
        Check(sqlite3_bind_blob64(stmt.get(), index, values[i].data(),
                                  values[i].size(), SQLITE_STATIC),
              sql));
  }
  for (const auto& [index, value] : ints) {
    RETURN_IF_ERROR(Check(sqlite3_bind_int64(stmt.get(), index, value), sql));
  }
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_DONE) return Check(rc, sql);
  return absl::OkStatus();
}

absl::Status SqliteDb::Int(absl::string_view sql, int64_t* value) {
  return ForEach(sql, [&](sqlite3_stmt* s) {
    *value = sqlite3_column_int64(s, 0);
    return absl::OkStatus();
  });
}

absl::Status SqliteDb::Check(int rc, absl::string_view sql) const {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) {
    return absl::OkStatus();
  }
  const absl::string_view first_line = sql.substr(0, sql.find('\n'));
  return absl::UnavailableError(absl::StrCat(
      description_, ": ", sqlite3_errmsg(db_), " (in ", first_line, ")"));
}

std::string SqliteDb::Blob(sqlite3_stmt* s, int column) {
  const void* data = sqlite3_column_blob(s, column);
  const int size = sqlite3_column_bytes(s, column);
  if (data == nullptr || size <= 0) return std::string();
  return std::string(static_cast<const char*>(data), size);
}

absl::Status SqliteDb::Prepare(absl::string_view sql, Statement* stmt) {
  return Check(sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()),
                                  stmt->out(), nullptr),
               sql);
}

}  // namespace gradsync
