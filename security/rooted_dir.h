// RootedDir: a directory held open for a whole job, reached from a root
// without following any symbolic link below it: the worker's checkpoint
// directory under its --checkpoint-root (security/path_roots.h).
//
//   ASSIGN_OR_RETURN(RootedDir dir,
//                    RootedDir::OpenUnderRoots("checkpoint.directory", path,
//                                              roots, /*create=*/true));
//   ...                                   // later, before each write:
//   RETURN_IF_ERROR(dir.Verify());        // still where it was?
//   openat(dir.fd(), name, O_CREAT | O_EXCL | O_NOFOLLOW | ...);
//
// The root is opened as named (links followed: it is the operator's); each
// component below it with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
// where the kernel has it, else one openat(O_DIRECTORY | O_NOFOLLOW) per
// component from the root's descriptor, creating missing ones (0755) when
// asked. Without a root the directory itself is opened as named and
// counts as its own root.
//
// What goes through fd() lands in the directory opened at the start, even
// if its path changes meanwhile. Verify() says whether the path still
// leads, the same way, to that directory: a component swapped for a link,
// or the directory moved or removed, fails it with FAILED_PRECONDITION
// naming the path, so the job's next write fails instead of landing in a
// directory that may since have been moved out of the root.
//
// Thread-compatible; the descriptors are O_CLOEXEC. Move-only.
#ifndef GRADSYNC_SECURITY_ROOTED_DIR_H_
#define GRADSYNC_SECURITY_ROOTED_DIR_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/unique_fd.h"

namespace gradsync {

class RootedDir {
 public:
  // Opens directory `path` beneath `root`: `path` must be `root` or lie
  // lexically below it (both absolute, without ".", ".." or empty parts:
  // NormalizeRoot'ed). With `root` empty, `path` (any form) is opened as
  // named. `create`: missing directories are made, the root's own missing
  // parents included. Errors name `path`: INVALID_ARGUMENT when it is not
  // below `root`; FAILED_PRECONDITION for a symbolic link or a file that is
  // not a directory below the root (naming it); NOT_FOUND for a missing part
  // when not `create`; INTERNAL for other I/O errors.
  [[nodiscard]] static absl::StatusOr<RootedDir> Open(absl::string_view root,
                                                      absl::string_view path,
                                                      bool create);

  // Open beneath the root of `roots` that holds `path` (the longest), or as
  // named when `roots` is empty. A path outside them is INVALID_ARGUMENT
  // naming the job spec `field` (CheckUnderRoots).
  [[nodiscard]] static absl::StatusOr<RootedDir> OpenUnderRoots(
      absl::string_view field, const std::string& path,
      const std::vector<std::string>& roots, bool create);

  RootedDir(RootedDir&&) = default;
  RootedDir& operator=(RootedDir&&) = default;

  // OK while the root, opened again as named, is the root opened at the
  // start and the walk below it (no link followed) reaches the directory
  // held. FAILED_PRECONDITION naming the path, what changed and what to do
  // otherwise.
  [[nodiscard]] absl::Status Verify() const;

  // The directory held, for openat, renameat, fsync... (O_RDONLY).
  int fd() const { return fd_.get(); }
  // As given to Open.
  const std::string& path() const { return path_; }
  // The root it was opened beneath ("" when opened as named).
  const std::string& root() const { return root_; }

 private:
  RootedDir() = default;

  std::string root_;    // as given; "" without one
  std::string path_;    // as given
  std::string below_;   // path_ relative to the root; "" for the root
  UniqueFd root_fd_;    // the root (path_ itself without one)
  UniqueFd fd_;         // the directory
  dev_t root_dev_ = 0;  // root_fd_'s identity
  ino_t root_ino_ = 0;
  dev_t dev_ = 0;  // fd_'s identity
  ino_t ino_ = 0;
};

// Tests only: false makes every walk take the openat component walk, as
// on a kernel without openat2 (before Linux 5.6); true tries openat2 again.
void SetRootedDirOpenat2ForTesting(bool enabled);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_ROOTED_DIR_H_
