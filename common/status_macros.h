// Small status helpers. The Abseil in Debian 12 (20220623) ships no
// status_macros.h, so gradsync keeps these two macros of its own.
//
//   RETURN_IF_ERROR(conn->Send(buf));
//   ASSIGN_OR_RETURN(int fd, Listen(addr));
#ifndef GRADSYNC_COMMON_STATUS_MACROS_H_
#define GRADSYNC_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GRADSYNC_CONCAT_INNER_(a, b) a##b
#define GRADSYNC_CONCAT_(a, b) GRADSYNC_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` yields a non-OK status.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status gradsync_status_ = (expr);            \
    if (!gradsync_status_.ok()) return gradsync_status_; \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise moves the value into `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  GRADSYNC_ASSIGN_OR_RETURN_IMPL_(   \
      GRADSYNC_CONCAT_(gradsync_statusor_, __LINE__), lhs, rexpr)

#define GRADSYNC_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();    \
  lhs = std::move(statusor).value()

namespace gradsync {

// Returns `status` with `context` prepended to its message ("context: msg"),
// keeping the code. OK stays OK.
[[nodiscard]] absl::Status Annotate(const absl::Status& status,
                                    absl::string_view context);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_STATUS_MACROS_H_
