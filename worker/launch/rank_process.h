// RankProcess: one process of an entrypoint job (a user's training
// script), started by the worker daemon with fork + exec, in a process
// group of its own, as TorchElastic's agent starts its workers.
//
//   SpawnOptions options;
//   options.argv = {"python3", "train.py"};
//   options.workdir = "/home/me/run";
//   options.env = {"RANK=0", "WORLD_SIZE=2", ...};
//   ASSIGN_OR_RETURN(std::unique_ptr<RankProcess> p,
//                    RankProcess::Spawn(options));
//   ... poll p->stdout_fd(), p->stderr_fd(), p->report_fd() ...
//   p->SignalGroup(SIGTERM);
//   std::optional<int> status = p->TryReap();  // waitpid status once ended
//
// The child:
//   - leads a new process group (setpgid), so that a signal to the group
//     reaches whatever the script started (DataLoader workers, shells);
//   - gets SIGKILL when the thread that spawned it ends
//     (PR_SET_PDEATHSIG): the daemon spawns from the job's runner thread,
//     which lives until its processes are reaped, so a daemon killed with
//     SIGKILL takes its ranks with it (leftovers.h finds the grandchildren
//     such a death leaves behind);
//   - starts with no blocked signals and default dispositions (the daemon
//     blocks SIGTERM for its sigwait, and a mask survives exec);
//   - has stdin on /dev/null, stdout and stderr on pipes, and the write end
//     of a report pipe as fd kReportFd (GRADSYNC_REPORT_FD), through which
//     the gradsync package sends step metrics (report_wire.h);
//   - closes every other descriptor the daemon holds (close_range).
//
// Errors: Spawn returns INVALID_ARGUMENT for an empty argv, NOT_FOUND for
// a workdir that is not a directory, INTERNAL when pipe or fork fails; an
// exec failure (no such program) shows as exit status 127 with the reason
// on the child's stderr.
// Threading: one thread at a time; Spawn from the thread that will reap
// (see PR_SET_PDEATHSIG above).
#ifndef GRADSYNC_WORKER_LAUNCH_RANK_PROCESS_H_
#define GRADSYNC_WORKER_LAUNCH_RANK_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

// The descriptor number the report pipe has in the child.
inline constexpr int kReportFd = 3;

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] looked up in the env's PATH
  std::string workdir;
  // The child's whole environment, "NAME=value" each.
  std::vector<std::string> env;
};

class RankProcess {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RankProcess>> Spawn(
      const SpawnOptions& options);

  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;
  // SIGKILLs the group and reaps the child if it still runs; closes fds.
  ~RankProcess();

  pid_t pid() const { return pid_; }
  // Read ends; -1 once closed (CloseOutput).
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  int report_fd() const { return report_fd_; }
  // Closes the read end `fd` (after EOF).
  void CloseOutput(int fd);

  // Sends `signal_number` to the child's process group (every process it
  // started that did not leave the group), unless the group is gone.
  void SignalGroup(int signal_number);

  // The waitpid status once the child has ended (reaped then), or nothing
  // while it runs. After it has ended, signals still reach the rest of its
  // group, if any.
  std::optional<int> TryReap();
  bool reaped() const { return reaped_; }

 private:
  RankProcess(pid_t pid, int out, int err, int report)
      : pid_(pid), stdout_fd_(out), stderr_fd_(err), report_fd_(report) {}

  const pid_t pid_;
  int stdout_fd_;
  int stderr_fd_;
  int report_fd_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_RANK_PROCESS_H_
