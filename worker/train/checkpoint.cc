#include "worker/train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

// Version 2 adds the checksum trailer; version 1 files still load.
constexpr char kMagic[8] = {'G', 'S', 'C', 'K', 'P', 'T', '0', '2'};
constexpr char kMagicV1[8] = {'G', 'S', 'C', 'K', 'P', 'T', '0', '1'};

// Over everything the file holds: the fields, then the parameters and each
// optimizer buffer (HashParameters of each, which covers its length).
uint64_t Checksum(int64_t steps_done, absl::Span<const float> params,
                  uint8_t kind, uint64_t step,
                  const std::vector<std::vector<float>>& buffers) {
  constexpr uint64_t kPrime = 1099511628211ULL;  // FNV-1a's
  uint64_t h = 14695981039346656037ULL;
  for (uint64_t v :
       {static_cast<uint64_t>(steps_done), static_cast<uint64_t>(kind), step,
        static_cast<uint64_t>(buffers.size()), HashParameters(params)}) {
    h = (h ^ v) * kPrime;
  }
  for (const std::vector<float>& buffer : buffers) {
    h = (h ^ HashParameters(buffer)) * kPrime;
  }
  return h;
}

// Buffered writes to a file descriptor; the first error sticks (errno).
class FdWriter {
 public:
  explicit FdWriter(int fd) : fd_(fd) { buffer_.reserve(kBufferBytes); }

  template <typename T>
  void Put(const T& value) {
    Write(&value, sizeof(value));
  }
  void PutFloats(absl::Span<const float> values) {
    Put(static_cast<uint64_t>(values.size()));
    Write(values.data(), values.size() * sizeof(float));
  }
  void Write(const void* data, size_t n) {
    const char* bytes = static_cast<const char*>(data);
    if (buffer_.size() + n > kBufferBytes) Flush();
    if (n >= kBufferBytes) {
      WriteAll(bytes, n);
    } else {
      buffer_.insert(buffer_.end(), bytes, bytes + n);
    }
  }
  // Writes what is buffered; the first error's errno, or 0.
  int Flush() {
    WriteAll(buffer_.data(), buffer_.size());
    buffer_.clear();
    return error_;
  }

 private:
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  void WriteAll(const char* bytes, size_t n) {
    while (n > 0 && error_ == 0) {
      const ssize_t wrote = write(fd_, bytes, n);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) {
        error_ = wrote < 0 ? errno : EIO;
        return;
      }
      bytes += wrote;
      n -= static_cast<size_t>(wrote);
    }
  }

  const int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// Reads a checkpoint's fields from a file descriptor; a short read is a
// truncated file (DATA_LOSS), naming `path`.
class FdReader {
 public:
  FdReader(int fd, const std::string& path) : fd_(fd), path_(path) {}

  template <typename T>
  [[nodiscard]] absl::Status Get(T* value) {
    return Read(value, sizeof(*value));
  }

  [[nodiscard]] absl::Status GetFloats(std::vector<float>* values,
                                       uint64_t limit) {
    uint64_t n = 0;
    RETURN_IF_ERROR(Get(&n));
    if (n > limit) {
      return absl::DataLossError(
          absl::StrCat(path_, ": truncated or corrupt checkpoint (a vector of ",
                       n, " floats does not fit in the file)"));
    }
    values->resize(n);
    return Read(values->data(), n * sizeof(float));
  }

  [[nodiscard]] absl::Status Read(void* data, size_t n) {
    char* bytes = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t got = read(fd_, bytes, n);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        return absl::DataLossError(
            absl::StrCat("cannot read ", path_, ": ", std::strerror(errno)));
      }
      if (got == 0) {
        return absl::DataLossError(
            absl::StrCat(path_, ": truncated checkpoint"));
      }
      bytes += got;
      n -= static_cast<size_t>(got);
    }
    return absl::OkStatus();
  }

 private:
  const int fd_;
  const std::string& path_;
};

// O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: a
// checkpoint is the file itself, not a link to one.
constexpr int kReadFlags =
    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK;

// What a path that is not a regular file is, for the error.
const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

}  // namespace

std::string CheckpointFileName(int64_t steps_done) {
  return absl::StrCat("step-", steps_done, ".ckpt");
}

std::string CheckpointPath(const std::string& directory, int64_t steps_done) {
  return absl::StrCat(directory, "/", CheckpointFileName(steps_done));
}

absl::Status WriteCheckpoint(const RootedDir& dir, const std::string& name,
                             int64_t steps_done, absl::Span<const float> params,
                             const OptimizerState& optimizer) {
  const std::string path = absl::StrCat(dir.path(), "/", name);
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint path '", path, "' does not name a file in a directory"));
  }
  auto not_written = [&path](const absl::Status& why) {
    return absl::Status(
        why.code(),
        absl::StrCat("checkpoint ", path, " was not written: ", why.message()));
  };
  // The directory is still the one the job opened, where its path says:
  // nothing goes into one swapped for a link or moved out of the root.
  if (absl::Status s = dir.Verify(); !s.ok()) return not_written(s);
  // A fresh name that nothing may already hold (O_EXCL, O_NOFOLLOW): the
  // bytes never go through a planted file or link.
  const std::string tmp =
      absl::StrCat(".", name, ".tmp.", getpid(), ".", syscall(SYS_gettid), ".",
                   absl::ToUnixNanos(absl::Now()));
  UniqueFd file(openat(dir.fd(), tmp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0644));
  if (file.get() < 0) {
    return absl::InternalError(absl::StrCat("cannot create ", dir.path(), "/",
                                            tmp, ": ", std::strerror(errno)));
  }
  auto fail = [&](const char* what, int error) {
    unlinkat(dir.fd(), tmp.c_str(), 0);
    return absl::InternalError(absl::StrCat("cannot ", what, " checkpoint ",
                                            path, ": ", std::strerror(error)));
  };
  FdWriter out(file.get());
  out.Write(kMagic, sizeof(kMagic));
  out.Put(steps_done);
  out.PutFloats(params);
  out.Put(static_cast<uint8_t>(optimizer.kind));
  out.Put(static_cast<uint64_t>(optimizer.step));
  out.Put(static_cast<uint32_t>(optimizer.buffers.size()));
  for (const auto& buffer : optimizer.buffers) out.PutFloats(buffer);
  out.Put(Checksum(steps_done, params, static_cast<uint8_t>(optimizer.kind),
                   static_cast<uint64_t>(optimizer.step), optimizer.buffers));
  if (const int error = out.Flush(); error != 0) return fail("write", error);
  // The bytes reach the disk before the name points at them, and the
  // name before we report the checkpoint written.
  if (fsync(file.get()) != 0) return fail("sync", errno);
  if (const int error = file.Close(); error != 0) return fail("close", error);
  if (renameat(dir.fd(), tmp.c_str(), dir.fd(), name.c_str()) != 0) {
    return fail("rename", errno);
  }
  if (fsync(dir.fd()) != 0) {
    return absl::InternalError(absl::StrCat("cannot sync directory ",
                                            dir.path(), " after writing ", path,
                                            ": ", std::strerror(errno)));
  }
  // Moved while the file was being written: it may have been taken out of
  // the root, and the file with it. Take the file back out.
  if (absl::Status s = dir.Verify(); !s.ok()) {
    unlinkat(dir.fd(), name.c_str(), 0);
    fsync(dir.fd());
    return not_written(s);
  }
  return absl::OkStatus();
}

absl::Status WriteCheckpoint(const std::string& path, int64_t steps_done,
                             absl::Span<const float> params,
                             const OptimizerState& optimizer) {
  const std::filesystem::path target(path);
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint path '", path, "' does not name a file in a directory"));
  }
  const std::string directory =
      target.has_parent_path() ? target.parent_path().string() : ".";
  absl::StatusOr<RootedDir> dir = RootedDir::Open("", directory, true);
  if (!dir.ok()) {
    return absl::Status(dir.status().code(),
                        absl::StrCat("cannot open checkpoint directory ",
                                     directory, ": ", dir.status().message()));
  }
  return WriteCheckpoint(*dir, name, steps_done, params, optimizer);
}

namespace {

// Reads the checkpoint open at `fd` (or says why the open failed, from
// errno, when `fd` is -1); errors name `path`.
[[nodiscard]] absl::StatusOr<Checkpoint> ReadOpened(int fd,
                                                    const std::string& path) {
  const int open_error = errno;
  UniqueFd file(fd);
  if (file.get() < 0) {
    if (open_error == ELOOP) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " is a symbolic link; name the checkpoint file itself"));
    }
    return absl::NotFoundError(absl::StrCat("no checkpoint at ", path, " (",
                                            std::strerror(open_error), ")"));
  }
  struct stat st {};
  if (fstat(file.get(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", FileKind(st.st_mode),
                     ", not a checkpoint file (e.g. ckpt/step-100.ckpt)"));
  }
  const int flags = fcntl(file.get(), F_GETFL);
  if (flags >= 0) fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK);
  const uint64_t limit = static_cast<uint64_t>(st.st_size) / sizeof(float);
  FdReader r(file.get(), path);
  char magic[sizeof(kMagic)];
  const bool read_magic = r.Read(magic, sizeof(magic)).ok();
  const bool v1 =
      read_magic && std::memcmp(magic, kMagicV1, sizeof(kMagicV1)) == 0;
  if (!read_magic || (!v1 && std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a gradsync checkpoint (bad magic)"));
  }
  Checkpoint c;
  RETURN_IF_ERROR(r.Get(&c.steps_done));
  RETURN_IF_ERROR(r.GetFloats(&c.params, limit));
  uint8_t kind = 0;
  uint64_t step = 0;
  uint32_t buffers = 0;
  RETURN_IF_ERROR(r.Get(&kind));
  RETURN_IF_ERROR(r.Get(&step));
  RETURN_IF_ERROR(r.Get(&buffers));
  if (buffers > 8) {
    return absl::DataLossError(
        absl::StrCat(path, ": implausible optimizer buffer count ", buffers));
  }
  c.optimizer.kind = static_cast<OptimizerKind>(kind);
  c.optimizer.step = step;
  c.optimizer.size = c.params.size();
  c.optimizer.buffers.resize(buffers);
  for (auto& buffer : c.optimizer.buffers) {
    RETURN_IF_ERROR(r.GetFloats(&buffer, limit));
  }
  if (!v1) {
    uint64_t stored = 0;
    RETURN_IF_ERROR(r.Get(&stored));
    if (stored !=
        Checksum(c.steps_done, c.params, kind, step, c.optimizer.buffers)) {
      return absl::DataLossError(absl::StrCat(
          path, " is corrupt: its checksum does not match its contents"));
    }
  }
  RETURN_IF_ERROR(ValidateOptimizerState(c.optimizer));
  return c;
}

}  // namespace

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  return ReadOpened(open(path.c_str(), kReadFlags), path);
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const RootedDir& dir,
                                          const std::string& name) {
  const std::string path = absl::StrCat(dir.path(), "/", name);
  if (name.empty() || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint path '", path, "' does not name a file in a directory"));
  }
  return ReadOpened(openat(dir.fd(), name.c_str(), kReadFlags), path);
}

absl::StatusOr<Checkpoint> ReadCheckpointUnderRoots(
    const std::string& path, const std::vector<std::string>& roots) {
  if (roots.empty()) return ReadCheckpoint(path);
  const std::filesystem::path target(path);
  absl::StatusOr<RootedDir> dir = RootedDir::OpenUnderRoots(
      "checkpoint.resumeFrom", target.parent_path().string(), roots, false);
  if (!dir.ok()) {
    return absl::Status(dir.status().code(),
                        absl::StrCat("no checkpoint read at ", path, ": ",
                                     dir.status().message()));
  }
  return ReadCheckpoint(*dir, target.filename().string());
}

}  // namespace gradsync
