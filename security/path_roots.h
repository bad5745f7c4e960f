// Directories a job spec may name for its files (checkpoints to write,
// checkpoints to resume from), given as --checkpoint-root to the
// coordinator and to the worker daemons. Without roots, any path goes (the
// daemons say so at start).
//
//   ASSIGN_OR_RETURN(std::string root, NormalizeRoot("/var/lib/gradsync/"));
//   RETURN_IF_ERROR(CheckUnderRoots("checkpoint.resumeFrom", path, {root}));
//
// The coordinator checks lexically (it cannot see the workers' files); a
// worker also resolves the symbolic links of what exists on its disk
// (CheckResolvedUnderRoots), so a link inside a root cannot lead out.
//
// Thread-safe: functions of their arguments and the file system.
#ifndef GRADSYNC_SECURITY_PATH_ROOTS_H_
#define GRADSYNC_SECURITY_PATH_ROOTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// `root` without a trailing slash. INVALID_ARGUMENT unless it is absolute
// and lexically normal (no ".", ".." or empty component).
[[nodiscard]] absl::StatusOr<std::string> NormalizeRoot(absl::string_view root);

// "a,b" of roots, each NormalizeRoot'ed; "" is no roots.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ParseRoots(
    absl::string_view list);

// OK when `roots` or `path` is empty (no file named), or `path` is absolute,
// lexically normal and lies in one of `roots` (the root itself or below it).
// INVALID_ARGUMENT naming `field`, the path and the roots otherwise.
[[nodiscard]] absl::Status CheckUnderRoots(
    absl::string_view field, const std::string& path,
    const std::vector<std::string>& roots);

// The longest of `roots` that `path` lies in lexically (the root itself or
// below it); "" when none does, or `path` is not absolute and normal.
std::string RootHolding(const std::string& path,
                        const std::vector<std::string>& roots);

// CheckUnderRoots, then the same for the path with the symbolic links of
// its existing part resolved, against the roots resolved likewise.
[[nodiscard]] absl::Status CheckResolvedUnderRoots(
    absl::string_view field, const std::string& path,
    const std::vector<std::string>& roots);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_PATH_ROOTS_H_
