#include "security/rooted_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "security/path_roots.h"

namespace gradsync {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

// Whether to try openat2: until it says ENOSYS (a kernel before 5.6), or
// a test says not to.
std::atomic<bool> openat2_usable{true};

// openat2 of `below` beneath `dirfd` without following any link: the
// descriptor, or -1 with errno (ENOSYS where the kernel or the build's
// headers lack it; then it is not tried again).
int OpenBeneath(int dirfd, const std::string& below) {
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
  if (openat2_usable.load(std::memory_order_relaxed)) {
    struct open_how how {};
    how.flags = kDirFlags | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd =
        syscall(SYS_openat2, dirfd, below.c_str(), &how, sizeof(how));
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == ENOSYS) openat2_usable.store(false, std::memory_order_relaxed);
    return -1;
  }
#endif
  errno = ENOSYS;
  return -1;
}

// `below` ("a/b/c", or "" for `dirfd` itself) beneath `dirfd`, which errors
// call `shown`, following no symbolic link; missing components are made
// when `create`. openat2 first; on any failure the component walk, which
// also says which component is wrong.
[[nodiscard]] absl::StatusOr<UniqueFd> Walk(int dirfd, const std::string& shown,
                                            const std::string& below,
                                            bool create) {
  if (below.empty()) {
    UniqueFd copy(fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
    if (copy.get() < 0) {
      return absl::InternalError(
          absl::StrCat("cannot duplicate the "
                       "descriptor of ",
                       shown, ": ", std::strerror(errno)));
    }
    return copy;
  }
  if (const int fd = OpenBeneath(dirfd, below); fd >= 0) return UniqueFd(fd);
  UniqueFd held;
  int at = dirfd;
  std::string walked = shown;
  for (absl::string_view part : absl::StrSplit(below, '/')) {
    const std::string name(part);
    walked = absl::StrCat(walked == "/" ? "" : walked, "/", name);
    int fd = openat(at, name.c_str(), kDirFlags | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT && create) {
      if (mkdirat(at, name.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::InternalError(absl::StrCat(
            "cannot create directory ", walked, ": ", std::strerror(errno)));
      }
      fd = openat(at, name.c_str(), kDirFlags | O_NOFOLLOW);
    }
    if (fd < 0) {
      const int error = errno;
      struct stat st {};
      if (fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
          return absl::FailedPreconditionError(
              absl::StrCat(walked, " is a symbolic link"));
        }
        if (!S_ISDIR(st.st_mode)) {
          return absl::FailedPreconditionError(
              absl::StrCat(walked, " is not a directory"));
        }
      }
      if (error == ENOENT) {
        return absl::NotFoundError(absl::StrCat(walked, " does not exist"));
      }
      return absl::InternalError(
          absl::StrCat("cannot open ", walked, ": ", std::strerror(error)));
    }
    held = UniqueFd(fd);
    at = held.get();
  }
  return held;
}

bool Identify(int fd, dev_t* dev, ino_t* ino) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  return true;
}

}  // namespace

void SetRootedDirOpenat2ForTesting(bool enabled) {
  openat2_usable.store(enabled, std::memory_order_relaxed);
}

absl::StatusOr<RootedDir> RootedDir::Open(absl::string_view root,
                                          absl::string_view path, bool create) {
  RootedDir d;
  d.root_ = std::string(root);
  d.path_ = std::string(path);
  std::string top = d.path_;  // what is opened as named
  if (!root.empty()) {
    absl::StatusOr<std::string> normal = NormalizeRoot(path);
    if (!normal.ok() || RootHolding(*normal, {d.root_}) != d.root_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "directory '", path, "' is not an absolute path below the root '",
          root, "'"));
    }
    top = d.root_;
    d.below_ = normal->substr(
        std::min(normal->size(), d.root_.size() + (d.root_ == "/" ? 0 : 1)));
  }
  if (create) {
    std::error_code ec;
    std::filesystem::create_directories(top, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create directory ", top, ": ", ec.message()));
    }
  }
  d.root_fd_ = UniqueFd(open(top.c_str(), kDirFlags));
  if (d.root_fd_.get() < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("directory ", top, " does not exist"));
    }
    if (error == ENOTDIR) {
      return absl::FailedPreconditionError(
          absl::StrCat(top, " is not a directory"));
    }
    return absl::InternalError(
        absl::StrCat("cannot open ", top, ": ", std::strerror(error)));
  }
  if (!Identify(d.root_fd_.get(), &d.root_dev_, &d.root_ino_)) {
    return absl::InternalError(
        absl::StrCat("cannot stat ", top, ": ", std::strerror(errno)));
  }
  absl::StatusOr<UniqueFd> fd = Walk(d.root_fd_.get(), top, d.below_, create);
  if (!fd.ok()) {
    if (fd.status().code() != absl::StatusCode::kFailedPrecondition) {
      return fd.status();
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot open ", path, ": ", fd.status().message(),
        ", and no link is followed below the root ", root,
        "; name the real directory (or make it a root of its own)"));
  }
  d.fd_ = *std::move(fd);
  if (!Identify(d.fd_.get(), &d.dev_, &d.ino_)) {
    return absl::InternalError(
        absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  return d;
}

absl::StatusOr<RootedDir> RootedDir::OpenUnderRoots(
    absl::string_view field, const std::string& path,
    const std::vector<std::string>& roots, bool create) {
  if (roots.empty()) return Open("", path, create);
  if (absl::Status s = CheckUnderRoots(field, path, roots); !s.ok()) return s;
  return Open(RootHolding(path, roots), path, create);
}

absl::Status RootedDir::Verify() const {
  const std::string& top = root_.empty() ? path_ : root_;
  std::string detail;
  dev_t dev = 0;
  ino_t ino = 0;
  UniqueFd now(open(top.c_str(), kDirFlags));
  if (now.get() < 0) {
    detail = absl::StrCat("cannot open ", top, ": ", std::strerror(errno));
  } else if (!Identify(now.get(), &dev, &ino) || dev != root_dev_ ||
             ino != root_ino_) {
    detail = absl::StrCat(top, " is another directory now");
  } else {
    absl::StatusOr<UniqueFd> walked =
        Walk(root_fd_.get(), top, below_, /*create=*/false);
    if (!walked.ok()) {
      detail = std::string(walked.status().message());
    } else if (!Identify(walked->get(), &dev, &ino) || dev != dev_ ||
               ino != ino_) {
      detail = absl::StrCat(path_, " is another directory now");
    } else {
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      path_,
      " was replaced by a symbolic link or moved since the job started (",
      detail, "); it is no longer the directory the job opened",
      root_.empty() ? "" : absl::StrCat(" below the root ", root_),
      ". Put that directory back where it was (a real directory, no link "
      "on the way), or resubmit the job with another one"));
}

}  // namespace gradsync
