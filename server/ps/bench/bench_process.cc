#include "server/ps/bench/bench_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "absl/time/clock.h"

namespace gradsync {

std::string ReadLineFrom(int fd, absl::Duration timeout) {
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    pollfd pfd = {fd, POLLIN, 0};
    if (ms <= 0) break;
    const int ready =
        poll(&pfd, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready != 1) break;
    char c;
    const ssize_t got = read(fd, &c, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got != 1 || c == '\n') break;
    line.push_back(c);
  }
  return line;
}

bool WriteLineTo(int fd, const std::string& line) {
  const std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

ChildProcess ChildProcess::Fork(
    const std::function<int(int in, int out)>& body) {
  int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
  if (pipe(to_child) != 0 || pipe(from_child) != 0) {
    std::perror("gradsync-ps-bench: pipe");
    return ChildProcess(-1, -1, -1);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(to_child[1]);
    close(from_child[0]);
    const int code = body(to_child[0], from_child[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  close(to_child[0]);
  close(from_child[1]);
  if (pid < 0) {
    std::perror("gradsync-ps-bench: fork");
    close(to_child[1]);
    close(from_child[0]);
    return ChildProcess(-1, -1, -1);
  }
  return ChildProcess(pid, to_child[1], from_child[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), to_(other.to_), from_(other.from_) {
  other.pid_ = -1;
  other.to_ = -1;
  other.from_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (to_ >= 0) close(to_);
  if (from_ >= 0) close(from_);
}

int ChildProcess::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) return -1;
    if (absl::Now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace gradsync
