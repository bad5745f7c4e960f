#include "tests/util/daemon_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/time/clock.h"

namespace gradsync {
namespace testing {

DaemonProcess::DaemonProcess(std::string binary,
                             std::vector<std::string> args) {
  int fds[2];
  if (pipe(fds) != 0) return;
  // argv is built before fork: the child only execs.
  std::vector<char*> argv = {binary.data()};
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // The environment without GRADSYNC_TLS_DIR: a shell that ran `local up`
  // must not turn TLS on for daemons whose tests talk plaintext.
  std::vector<char*> envp;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "GRADSYNC_TLS_DIR=", 17) != 0) {
      envp.push_back(*entry);
    }
  }
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(fds[1]);
  stdout_fd_ = fds[0];
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

std::string DaemonProcess::ReadLine(absl::Duration timeout) {
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  char c;
  while (WaitReadable(deadline) && read(stdout_fd_, &c, 1) == 1 && c != '\n') {
    line.push_back(c);
  }
  return line;
}

void DaemonProcess::Signal(int signal_number) {
  if (pid_ <= 0 || reaped_) return;
  kill(pid_, signal_number);
  if (signal_number == SIGKILL) {
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }
}

int DaemonProcess::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0 || reaped_) return -1;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      reaped_ = true;
      return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    }
    if (absl::Now() >= deadline) return -1;
    // Drain what the child writes, waking at least every 10 ms.
    if (WaitReadable(
            std::min(deadline, absl::Now() + absl::Milliseconds(10)))) {
      char buffer[256];
      if (read(stdout_fd_, buffer, sizeof(buffer)) <= 0) {
        absl::SleepFor(absl::Milliseconds(10));  // EOF: the child is exiting
      }
    }
  }
}

bool DaemonProcess::WaitReadable(absl::Time deadline) {
  const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
  if (ms <= 0) return false;
  pollfd pfd = {stdout_fd_, POLLIN, 0};
  return poll(&pfd, 1, static_cast<int>(ms)) == 1;
}

}  // namespace testing
}  // namespace gradsync
