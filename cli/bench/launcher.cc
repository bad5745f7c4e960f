#include "cli/bench/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/wait_status.h"
#include "server/store/store_server.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(5);
// How long stopped ranks get to exit on SIGTERM before SIGKILL.
constexpr absl::Duration kStopGrace = absl::Seconds(3);

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
};

// The NULL-terminated array of pointers into `strings` that exec wants.
std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string& text : strings) {
    pointers.push_back(const_cast<char*>(text.c_str()));
  }
  pointers.push_back(nullptr);
  return pointers;
}

// fork + execve with `envp`, the child dying with its parent. Only
// async-signal-safe calls happen between fork and exec: argv and envp are
// built before forking.
[[nodiscard]] absl::StatusOr<pid_t> Spawn(
    const std::string& executable, const std::vector<std::string>& argv,
    const std::vector<std::string>& envp) {
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_envp = CStrings(envp);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    return absl::InternalError(
        absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    execve(executable.c_str(), c_argv.data(), c_envp.data());
    static const char kMessage[] =
        "gradsync bench: cannot execute the rank binary\n";
    ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    (void)ignored;
    _exit(127);
  }
  return pid;
}

// Reaps `child` if it has exited; returns true and its wait status then.
bool Reap(Child* child, int* status) {
  if (!child->running) return false;
  const pid_t got = waitpid(child->pid, status, WNOHANG);
  if (got != child->pid) return false;
  child->running = false;
  return true;
}

// SIGTERM to every running child, SIGKILL to those still running after
// kStopGrace; reaps them all. Returns the ranks that were stopped.
std::vector<int> StopAll(std::vector<Child>* children) {
  std::vector<int> stopped;
  for (Child& child : *children) {
    if (!child.running) continue;
    kill(child.pid, SIGTERM);
    stopped.push_back(child.rank);
  }
  const absl::Time kill_at = absl::Now() + kStopGrace;
  bool any_running = !stopped.empty();
  while (any_running && absl::Now() < kill_at) {
    absl::SleepFor(kPollInterval);
    any_running = false;
    for (Child& child : *children) {
      int status = 0;
      Reap(&child, &status);
      any_running |= child.running;
    }
  }
  for (Child& child : *children) {
    if (!child.running) continue;
    kill(child.pid, SIGKILL);
    int status = 0;
    waitpid(child.pid, &status, 0);
    child.running = false;
  }
  return stopped;
}

}  // namespace

absl::StatusOr<int> RunLocalRanks(const LaunchSpec& spec, int benign_exit) {
  ASSIGN_OR_RETURN(std::unique_ptr<StoreServer> server,
                   StoreServer::Start("127.0.0.1:0"));
  const std::string job = absl::StrCat(spec.job, "-", getpid(), "-",
                                       absl::ToUnixNanos(absl::Now()));
  // The spec's variables, then this process's other ones.
  std::vector<std::string> envp = spec.env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const absl::string_view variable(*entry);
    const bool replaced = std::any_of(
        spec.env.begin(), spec.env.end(), [variable](const std::string& set) {
          return absl::StartsWith(variable, set.substr(0, set.find('=') + 1));
        });
    if (!replaced) envp.emplace_back(variable);
  }
  std::vector<Child> children(spec.ranks);
  for (int r = 0; r < spec.ranks; ++r) {
    std::vector<std::string> argv = {"gradsync"};
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
    for (std::string arg :
         {std::string("--rank"), absl::StrCat(r), std::string("--world"),
          absl::StrCat(spec.ranks), std::string("--store"), server->address(),
          std::string("--job"), job}) {
      argv.push_back(std::move(arg));
    }
    absl::StatusOr<pid_t> pid = Spawn(spec.executable, argv, envp);
    if (!pid.ok()) {
      StopAll(&children);
      return Annotate(pid.status(), absl::StrCat("starting rank ", r));
    }
    children[r] = Child{r, *pid, true};
  }

  const absl::Time deadline = absl::Now() + spec.deadline;
  int worst = 0;
  int running = spec.ranks;
  while (running > 0) {
    // Reap everything that ended in this poll before judging: when one rank
    // dies its peers fail right after, and the killed one is the culprit.
    std::vector<std::string> signaled;
    std::vector<std::string> failed;
    for (Child& child : children) {
      int status = 0;
      if (!Reap(&child, &status)) continue;
      --running;
      if (WIFEXITED(status) &&
          (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == benign_exit)) {
        worst = std::max(worst, WEXITSTATUS(status));
        continue;
      }
      const std::string what = absl::StrCat(
          "rank ", child.rank, " of ", spec.ranks, " ", DescribeExit(status));
      (WIFSIGNALED(status) ? signaled : failed).push_back(what);
    }
    if (!signaled.empty() || !failed.empty()) {
      const std::vector<int> stopped = StopAll(&children);
      signaled.insert(signaled.end(), failed.begin(), failed.end());
      return absl::AbortedError(absl::StrCat(
          absl::StrJoin(signaled, "; "),
          stopped.empty()
              ? std::string()
              : absl::StrCat("; stopped ranks ", absl::StrJoin(stopped, ",")),
          failed.empty() ? "" : " (the ranks' errors are printed above)"));
    }
    if (running > 0 && absl::Now() > deadline) {
      const std::vector<int> stopped = StopAll(&children);
      return absl::DeadlineExceededError(absl::StrCat(
          "ranks ", absl::StrJoin(stopped, ","), " still running after ",
          absl::FormatDuration(spec.deadline),
          "; stopped them (raise --deadline for longer sweeps)"));
    }
    absl::SleepFor(kPollInterval);
  }
  server->Shutdown();
  return worst;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
