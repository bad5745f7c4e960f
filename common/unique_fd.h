// UniqueFd: owns a file descriptor and closes it at the end of its scope,
// as std::unique_ptr owns memory. Movable, not copyable.
//
//   UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
//   if (fd.get() < 0) return ...;
//   ... read(fd.get(), ...) ...
//   if (int error = fd.Close(); error != 0) ...;  // when close must succeed
//
// Thread-compatible: one owner at a time.
#ifndef GRADSYNC_COMMON_UNIQUE_FD_H_
#define GRADSYNC_COMMON_UNIQUE_FD_H_

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace gradsync {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }

  // Gives up ownership: the descriptor, for its new owner to close.
  int Release() { return std::exchange(fd_, -1); }

  // Closes the descriptor, if any, ignoring errors.
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  // Closes the descriptor and returns close's errno (0 if it succeeded):
  // for files whose last write errors only show at close.
  int Close() {
    if (fd_ < 0) return 0;
    const int rc = close(std::exchange(fd_, -1));
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_UNIQUE_FD_H_
