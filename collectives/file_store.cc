#include "collectives/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// Keys may contain '/': flatten them into one file name per key.
std::string Escape(absl::string_view key) {
  std::string out;
  for (char c : key) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
        c == '.') {
      out.push_back(c);
    } else {
      absl::StrAppend(
          &out, "%", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
  }
  return out;
}

[[nodiscard]] absl::Status BackOff(absl::Time deadline, absl::Duration* delay) {
  if (absl::Now() >= deadline) return absl::DeadlineExceededError("");
  absl::SleepFor(std::min(*delay, deadline - absl::Now()));
  *delay = std::min(*delay * 2, absl::Milliseconds(20));
  return absl::OkStatus();
}

}  // namespace

FileStore::FileStore(std::string dir) : dir_(std::move(dir)) {}

std::string FileStore::PathOf(absl::string_view key) const {
  return absl::StrCat(dir_, "/", Escape(key));
}

absl::StatusOr<std::string> FileStore::TryRead(absl::string_view key) const {
  std::ifstream in(PathOf(key), std::ios::binary);
  if (!in) return absl::NotFoundError(key);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status FileStore::Set(absl::string_view key, absl::string_view value) {
  const std::string path = PathOf(key);
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".", gettid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    if (!out) {
      return absl::InternalError(absl::StrCat("file store: cannot write ", tmp,
                                              ": ", strerror(errno)));
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("file store: cannot rename to ",
                                            path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileStore::Get(absl::string_view key,
                                           absl::Time deadline) {
  absl::Duration delay = absl::Microseconds(200);
  while (true) {
    auto v = TryRead(key);
    if (v.ok()) return v;
    if (!BackOff(deadline, &delay).ok()) {
      return absl::DeadlineExceededError(
          absl::StrCat("store key '", key,
                       "' was not set before the deadline (file "
                       "store at ",
                       dir_, ")"));
    }
  }
}

absl::StatusOr<int64_t> FileStore::Add(absl::string_view key, int64_t delta) {
  const std::string lock_path = PathOf(key) + ".lock";
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("file store: cannot open ",
                                            lock_path, ": ", strerror(errno)));
  }
  ::flock(fd, LOCK_EX);
  int64_t value = 0;
  absl::Status status;
  if (auto old = TryRead(key); old.ok() && !absl::SimpleAtoi(*old, &value)) {
    status = absl::FailedPreconditionError(
        absl::StrCat("store key '", key, "' holds a non-integer value"));
  }
  if (status.ok()) {
    value += delta;
    status = Set(key, absl::StrCat(value));
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  RETURN_IF_ERROR(status);
  return value;
}

absl::Status FileStore::Wait(const std::vector<std::string>& keys,
                             absl::Time deadline) {
  absl::Duration delay = absl::Microseconds(200);
  while (true) {
    std::vector<std::string> missing;
    for (const auto& k : keys) {
      if (::access(PathOf(k).c_str(), F_OK) != 0) missing.push_back(k);
    }
    if (missing.empty()) return absl::OkStatus();
    if (!BackOff(deadline, &delay).ok()) {
      return absl::DeadlineExceededError(
          absl::StrCat("store keys still missing at the deadline: ",
                       absl::StrJoin(missing, ", ")));
    }
  }
}

}  // namespace gradsync
