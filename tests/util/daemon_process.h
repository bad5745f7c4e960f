// DaemonProcess: a gradsync daemon binary (gradsync-store, -coordinator,
// -ps) run as a child process with its stdout on a pipe, for the tests
// that check a binary's command line, its announced address and its exit
// codes. Every wait has a deadline; the destructor SIGKILLs and reaps a
// child still running.
//
//   DaemonProcess ps(GRADSYNC_PS_BINARY, {"--listen", "127.0.0.1:0"});
//   ASSERT_TRUE(ps.started());
//   const std::string address = ps.ReadLine(absl::Seconds(10));
//   ps.Signal(SIGTERM);
//   EXPECT_EQ(ps.WaitForExit(absl::Seconds(10)), 0);
//
// Not thread-safe.
#ifndef GRADSYNC_TESTS_UTIL_DAEMON_PROCESS_H_
#define GRADSYNC_TESTS_UTIL_DAEMON_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gradsync {
namespace testing {

class DaemonProcess {
 public:
  // Starts `binary` with `args`; check started().
  DaemonProcess(std::string binary, std::vector<std::string> args);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  bool started() const { return pid_ > 0 && stdout_fd_ >= 0; }
  pid_t pid() const { return pid_; }

  // Reads stdout up to a newline (not returned), EOF or `timeout`.
  std::string ReadLine(absl::Duration timeout);

  // Sends `signal_number`; after SIGKILL the child is reaped at once.
  void Signal(int signal_number);

  // The exit code, or -1 if the child did not exit normally within
  // `timeout`. Drains stdout meanwhile, so a child writing to it never
  // blocks on a full pipe.
  int WaitForExit(absl::Duration timeout);

 private:
  // Waits until stdout is readable or `deadline`; false on timeout.
  bool WaitReadable(absl::Time deadline);

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_DAEMON_PROCESS_H_
