// ChildProcess: a daemon (gradsync-coordinator, gradsync-worker) started by
// an integration test with fork + exec, its stdout and stderr appended to
// one log file, so that a failing test can print what each process said.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> worker,
//                    ChildProcess::Start("worker-a", binary, args, log));
//   ...
//   worker->Signal(SIGKILL);              // simulate a crash
//   std::string how = worker->Stop(absl::Seconds(10));  // "exited with status
//   0"
//
// The child gets SIGKILL when the test process dies (PR_SET_PDEATHSIG), so
// a test killed by ctest's timeout leaves no daemon behind; the destructor
// kills and reaps it too.
//
// Errors: Start returns INTERNAL when the log cannot be opened or fork
// fails (an exec failure shows as exit code 127 and a line in the log).
// Threading: one thread at a time.
#ifndef GRADSYNC_TESTS_INTEGRATION_CHILD_PROCESS_H_
#define GRADSYNC_TESTS_INTEGRATION_CHILD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {
namespace testing {

class ChildProcess {
 public:
  // Runs `binary` with `args`; stdin is /dev/null, stdout and stderr go to
  // `log_path` (created or appended to). A non-empty `working_dir` (which
  // must exist) is the child's current directory.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      std::string name, const std::string& binary,
      const std::vector<std::string>& args, std::string log_path,
      const std::string& working_dir = "");

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps the process if it still runs.
  ~ChildProcess();

  const std::string& name() const { return name_; }
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return pid_; }

  // False once the process has exited (it is reaped then).
  bool Running();

  // Sends `signal_number` unless the process was already reaped.
  void Signal(int signal_number);

  // Waits until the process exits or `timeout` passes; true if it exited.
  bool WaitForExit(absl::Duration timeout);

  // SIGTERM, up to `grace` for a clean exit, then SIGKILL. Returns how it
  // ended (ExitDescription).
  std::string Stop(absl::Duration grace);

  // "running", or DescribeExit's words ("exited with status N", ...).
  std::string ExitDescription() const;

  // The whole log as text ("" when it cannot be read).
  std::string ReadLog() const;

 private:
  ChildProcess(std::string name, pid_t pid, std::string log_path)
      : name_(std::move(name)), pid_(pid), log_path_(std::move(log_path)) {}

  const std::string name_;
  const pid_t pid_;
  const std::string log_path_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_INTEGRATION_CHILD_PROCESS_H_
