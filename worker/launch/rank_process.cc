#include "worker/launch/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gradsync {
namespace {

std::string ErrnoText(int error) { return strerror(error); }

void CloseIfOpen(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// argv[0] as exec will find it: as given when it holds a '/' (relative to
// the workdir, where the child execs), else the first executable match in
// the environment's PATH; empty when there is none (the child then
// reports it and exits 127). Done before fork: the child may only make
// async-signal-safe calls.
std::string ResolveProgram(const std::string& name,
                           const std::vector<std::string>& env,
                           const std::string& workdir) {
  if (absl::StrContains(name, '/')) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& e : env) {
    if (absl::StartsWith(e, "PATH=")) path = e.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string d = dir.empty() ? "." : std::string(dir);
    if (d[0] != '/') d = absl::StrCat(workdir, "/", d);
    std::string candidate = absl::StrCat(d, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

// Writes `text` to fd 2 (async-signal-safe).
void ChildSay(const char* text) {
  ssize_t unused = write(2, text, strlen(text));
  (void)unused;
}

// Everything after fork: async-signal-safe calls only.
[[noreturn]] void RunChild(const char* program, char* const* argv,
                           char* const* envp, const char* workdir,
                           const char* not_found, int out, int err, int report,
                           pid_t parent) {
  // Dies with the daemon's spawning thread; and if it already died between
  // fork and here, now.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);
  setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
  }
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out, 1) < 0 ||
      dup2(err, 2) < 0 || dup2(report, kReportFd) < 0) {
    _exit(126);
  }
  close_range(kReportFd + 1, ~0U, 0);
  if (chdir(workdir) != 0) {
    ChildSay("gradsync-worker: cannot enter the job's workdir\n");
    _exit(126);
  }
  if (program[0] == '\0') {
    ChildSay(not_found);
    _exit(127);
  }
  execve(program, argv, envp);
  ChildSay("gradsync-worker: exec failed: ");
  ChildSay(strerror(errno));
  ChildSay("\n");
  _exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RankProcess>> RankProcess::Spawn(
    const SpawnOptions& options) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("an entrypoint needs a program to run");
  }
  struct stat st;
  if (stat(options.workdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat(
        "the job's workdir ", options.workdir,
        " is not a directory on this host; create it, or submit with a "
        "--workdir every worker has"));
  }
  // Everything the child needs, built before fork.
  const std::string program =
      ResolveProgram(options.argv[0], options.env, options.workdir);
  const std::string not_found =
      absl::StrCat("gradsync-worker: ", options.argv[0],
                   ": command not found in the job's PATH\n");
  std::vector<char*> argv;
  for (const std::string& a : options.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : options.env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int* p : {out, err, report}) {
      CloseIfOpen(&p[0]);
      CloseIfOpen(&p[1]);
    }
    return absl::InternalError(
        absl::StrCat("cannot make the rank's pipes: ", ErrnoText(error)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    RunChild(program.c_str(), argv.data(), envp.data(), options.workdir.c_str(),
             not_found.c_str(), out[1], err[1], report[1], parent);
  }
  const int fork_error = errno;
  close(out[1]);
  close(err[1]);
  close(report[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    close(report[0]);
    return absl::InternalError(absl::StrCat("cannot fork the rank's process: ",
                                            ErrnoText(fork_error)));
  }
  // Also from here, so that a signal sent before the child ran setpgid
  // reaches the right group.
  setpgid(pid, pid);
  for (int fd : {out[0], err[0], report[0]}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return std::unique_ptr<RankProcess>(
      new RankProcess(pid, out[0], err[0], report[0]));
}

RankProcess::~RankProcess() {
  SignalGroup(SIGKILL);
  if (!reaped_) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  CloseIfOpen(&stdout_fd_);
  CloseIfOpen(&stderr_fd_);
  CloseIfOpen(&report_fd_);
}

void RankProcess::CloseOutput(int fd) {
  for (int* own : {&stdout_fd_, &stderr_fd_, &report_fd_}) {
    if (*own == fd && fd >= 0) CloseIfOpen(own);
  }
}

void RankProcess::SignalGroup(int signal_number) {
  // The group outlives its leader while members remain; kill(-pgid) then
  // still reaches them, and fails with ESRCH once none is left. Until the
  // leader is reaped its pid cannot be reused, so the group id is ours.
  if (kill(-pid_, signal_number) != 0 && !reaped_) {
    kill(pid_, signal_number);
  }
}

std::optional<int> RankProcess::TryReap() {
  if (reaped_) return wait_status_;
  int status = 0;
  const pid_t got = waitpid(pid_, &status, WNOHANG);
  if (got == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return status;
  }
  return std::nullopt;
}

}  // namespace gradsync
