#include "tests/integration/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/wait_status.h"

namespace gradsync {
namespace testing {
namespace {

// How often WaitForExit looks at the child.
constexpr absl::Duration kExitPoll = absl::Milliseconds(20);
// SIGKILL cannot be caught; this only bounds a process stuck in the kernel.
constexpr absl::Duration kKillTimeout = absl::Seconds(10);

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    std::string name, const std::string& binary,
    const std::vector<std::string>& args, std::string log_path,
    const std::string& working_dir) {
  // Everything the child needs is prepared before fork: between fork and
  // exec a multi-threaded parent's child may only make async-signal-safe
  // calls.
  std::vector<std::string> storage = {binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(storage.size() + 1);
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int log_fd =
      open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open log ", log_path, ": ", std::strerror(errno)));
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return absl::InternalError(
        absl::StrCat("fork for ", name, " failed: ", std::strerror(error)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);  // the parent died already
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    // The test process blocks no signals the daemons rely on, but undo any
    // mask inherited from the forking thread.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) {
      static constexpr char kChdirFailed[] =
          "integration test: chdir to the working directory failed\n";
      (void)!write(STDERR_FILENO, kChdirFailed, sizeof(kChdirFailed) - 1);
      _exit(127);
    }
    execv(argv[0], argv.data());
    static constexpr char kExecFailed[] = "integration test: execv failed\n";
    (void)!write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    _exit(127);
  }
  close(log_fd);
  if (null_fd >= 0) close(null_fd);
  return std::unique_ptr<ChildProcess>(
      new ChildProcess(std::move(name), pid, std::move(log_path)));
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &wait_status_, 0);
  }
}

bool ChildProcess::Running() {
  if (reaped_) return false;
  const pid_t got = waitpid(pid_, &wait_status_, WNOHANG);
  if (got == pid_ || (got < 0 && errno == ECHILD)) reaped_ = true;
  return !reaped_;
}

void ChildProcess::Signal(int signal_number) {
  if (!reaped_) kill(pid_, signal_number);
}

bool ChildProcess::WaitForExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Running()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(kExitPoll);
  }
  return true;
}

std::string ChildProcess::Stop(absl::Duration grace) {
  if (Running()) {
    Signal(SIGTERM);
    if (!WaitForExit(grace)) {
      Signal(SIGKILL);
      WaitForExit(kKillTimeout);
      return absl::StrCat("did not exit within ", absl::FormatDuration(grace),
                          " of SIGTERM; killed with SIGKILL");
    }
  }
  return ExitDescription();
}

std::string ChildProcess::ExitDescription() const {
  if (!reaped_) return "running";
  return DescribeExit(wait_status_);
}

std::string ChildProcess::ReadLog() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace testing
}  // namespace gradsync
