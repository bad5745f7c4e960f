#include "server/coordinator/state_db_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gradsync {
namespace {

// The sidecar's one line: this, then the generation.
constexpr absl::string_view kSidecarPrefix =
    "gradsync state database generation ";
// A sidecar is one short line; anything longer is not one.
constexpr size_t kMaxSidecarBytes = 256;

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes it now; close's result.
  int Close() {
    const int rc = close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

[[nodiscard]] absl::Status Unavailable(absl::string_view what,
                                       const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

// Reads the sidecar at `files->sidecar` into `files`.
[[nodiscard]] absl::Status ReadSidecar(StateDbFiles* files) {
  Fd fd(open(files->sidecar.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    if (errno == ELOOP) {
      files->sidecar_problem = "is a symbolic link";
      return absl::OkStatus();
    }
    return Unavailable("read the state database's sidecar", files->sidecar);
  }
  char buffer[kMaxSidecarBytes + 1];
  size_t size = 0;
  while (size < sizeof(buffer)) {
    const ssize_t n = read(fd.get(), buffer + size, sizeof(buffer) - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Unavailable("read the state database's sidecar", files->sidecar);
    }
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  const absl::string_view text =
      absl::StripAsciiWhitespace(absl::string_view(buffer, size));
  absl::string_view number = text;
  int64_t generation = -1;
  if (size > kMaxSidecarBytes ||
      !absl::ConsumePrefix(&number, kSidecarPrefix) ||
      !absl::SimpleAtoi(number, &generation) || generation < 0) {
    files->sidecar_problem =
        absl::StrCat("holds no generation (a line \"", kSidecarPrefix, "N\")");
    return absl::OkStatus();
  }
  files->generation = generation;
  return absl::OkStatus();
}

// "does not exist" or "is empty (0 bytes)", of FILE.
std::string EmptyOrMissing(const StateDbFiles& files) {
  return files.db_exists ? "is empty (0 bytes)" : "does not exist";
}

}  // namespace

absl::StatusOr<StateDbFiles> InspectStateDbFiles(const std::string& db) {
  StateDbFiles files;
  files.db = db;
  files.wal = absl::StrCat(db, kStateDbWalSuffix);
  files.sidecar = absl::StrCat(db, kStateDbGenerationSuffix);
  struct stat st;
  if (lstat(db.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      // Not ours to judge here: the open refuses it, saying what it is.
      files.db_exists = true;
      files.db_bytes = -1;
      return files;
    }
    files.db_exists = true;
    files.db_bytes = static_cast<int64_t>(st.st_size);
  } else if (errno != ENOENT) {
    return Unavailable("examine the state database", db);
  }
  if (lstat(files.wal.c_str(), &st) == 0) {
    files.wal_exists = true;
    files.wal_bytes = static_cast<int64_t>(st.st_size);
  } else if (errno != ENOENT) {
    return Unavailable("examine the state database's log", files.wal);
  }
  if (absl::Status status = ReadSidecar(&files); !status.ok()) return status;
  return files;
}

absl::Status CheckStateDbBeforeOpen(const StateDbFiles& files) {
  if (!files.sidecar_problem.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the state database's sidecar ", files.sidecar, " ",
        files.sidecar_problem, ", so ", files.db,
        " cannot be checked against it; put back the sidecar that came with ",
        files.db, ", or start with --accept-state-rollback to take ", files.db,
        " as it is (the sidecar is then written anew)"));
  }
  if (files.db_bytes != 0) return absl::OkStatus();  // exists, not empty
  if (files.wal_bytes > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the state database ", files.db, " ", EmptyOrMissing(files),
        " but its write-ahead log ", files.wal, " holds ", files.wal_bytes,
        " bytes: SQLite would delete the log and the coordinator would start "
        "with no state; restore ",
        files.db, " beside it (from a copy of ", files.db, ", ", files.wal,
        " and ", files.sidecar,
        " taken together), or start with --accept-state-rollback to start "
        "with no state (the log is then kept as ",
        files.wal, kStateDbSetAsideSuffix, ")"));
  }
  if (files.generation.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the state database ", files.db, " ", EmptyOrMissing(files),
        " but its sidecar ", files.sidecar, " says generation ",
        *files.generation,
        " of it was saved: the database was deleted or emptied; restore ",
        files.db, " (with ", files.wal, " and ", files.sidecar,
        ", taken together), or start with --accept-state-rollback to start "
        "with no state"));
  }
  return absl::OkStatus();  // a new path
}

absl::Status CheckStateDbGeneration(const StateDbFiles& files,
                                    const StateDbContents& contents) {
  if (files.generation.has_value() && contents.generation < *files.generation) {
    if (files.wal_bytes == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the state database ", files.db, " is at generation ",
          contents.generation, " but its sidecar ", files.sidecar, " says ",
          *files.generation, ", and its write-ahead log ", files.wal,
          files.wal_exists ? " is empty" : " is missing",
          ": the commits since the coordinator's last checkpoint "
          "are only in that log (was ",
          files.db,
          " copied or restored without it?); restore the log beside it, or "
          "start with --accept-state-rollback if you mean to roll back to "
          "what ",
          files.db, " holds"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "the state database ", files.db, " (with its write-ahead log ",
        files.wal, ") is at generation ", contents.generation,
        " but its sidecar ", files.sidecar, " says ", *files.generation,
        ": it is an older state than the coordinator last saved (a copy from "
        "before its last start or checkpoint, or a log that lost its last "
        "commits); restore the newest ",
        files.db, ", ", files.wal, " and ", files.sidecar,
        " together, or start with --accept-state-rollback if you mean to roll "
        "back to it"));
  }
  if (!files.generation.has_value() && contents.has_header &&
      contents.has_state && !contents.before_generations) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the state database ", files.db, " holds a saved state (generation ",
        contents.generation, ") but its sidecar ", files.sidecar,
        " is missing, so whether it is the newest state cannot be told (was ",
        files.db, " copied without it, or without its log ", files.wal,
        "?); put the sidecar back beside it, or start with "
        "--accept-state-rollback if you mean to take ",
        files.db, " as it is"));
  }
  return absl::OkStatus();
}

absl::Status WriteStateDbGeneration(const std::string& path,
                                    int64_t generation) {
  const std::string temporary = absl::StrCat(path, ".tmp");
  const std::string line = absl::StrCat(kSidecarPrefix, generation, "\n");
  {
    Fd fd(open(temporary.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0 || fchmod(fd.get(), 0600) != 0) {
      return Unavailable("write the state database's sidecar", temporary);
    }
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = write(fd.get(), line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Unavailable("write the state database's sidecar", temporary);
      }
      done += static_cast<size_t>(n);
    }
    if (fsync(fd.get()) != 0 || fd.Close() != 0) {
      return Unavailable("write the state database's sidecar", temporary);
    }
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    return Unavailable(absl::StrCat("rename ", temporary, " to"), path);
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  Fd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0 || fsync(dir_fd.get()) != 0) {
    return Unavailable("write to disk the directory", dir);
  }
  return absl::OkStatus();
}

}  // namespace gradsync
